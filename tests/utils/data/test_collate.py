"""default_collate and default_convert against torch's on the same samples."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import scriptc
from scriptc.utils.data import default_collate, default_convert
from scriptc.utils.data._utils.collate import collate
from tests.torch_values import assert_same_values

torch = pytest.importorskip("torch")

Point = collections.namedtuple("Point", ["x", "y"])


def _samples(T, rng):
    """Samples with every kind of field, built for torch or scriptc (T)."""
    return [{
        "image": T.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)),
        "array": rng.integers(0, 9, 4),
        "label": int(rng.integers(0, 5)),
        "weight": float(rng.random()),
        "flag": bool(rng.random() > 0.5),
        "name": f"sample{i}",
        "raw": b"x" * i,
        "np_scalar": np.float32(rng.random()),
        "pair": (T.from_numpy(rng.standard_normal(2).astype(np.float32)), i),
        "point": Point(i, float(i) / 2),
        "nested": {"ids": [i, i + 1], "mask": rng.random(3) > 0.5},
    } for i in range(3)]


def _assert_same(ours, theirs):
    assert_same_values(ours, theirs, torch)


def test_default_collate_matches_torch():
    ours = default_collate(_samples(scriptc, np.random.default_rng(0)))
    theirs = torch.utils.data.default_collate(_samples(torch, np.random.default_rng(0)))
    _assert_same(ours, theirs)
    assert ours["pair"].__class__ is list, "a tuple collates to a list, as in torch"


def test_default_convert_matches_torch():
    sample = {"a": np.arange(3), "b": (np.float64(1.5), "s"), "c": [np.ones(2, np.float32)], "t": Point(np.int64(2), 1)}
    _assert_same(default_convert(sample), torch.utils.data.default_convert(sample))
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings


def test_collate_errors_as_torch_words_them():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                        "lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([scriptc.ones(2), scriptc.ones(3)])


def test_collate_with_a_custom_function_map():
    def count(batch, *, collate_fn_map=None):
        return len(batch)

    assert collate([{"s": "a"}, {"s": "b"}], collate_fn_map={str: count}) == {"s": 2}
