"""torch.Size (scriptc/tensors/core.py) against torch 2.13: what it is built from, what slicing, `+` and `*`
give, equality, hashing and pickling."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

EXPRESSIONS = [
    "repr(S)", "repr(S[1:])", "repr(S[::-1])", "S[-1]", "S.numel()", "T.Size([]).numel()",
    "repr(S + (5,))", "repr((1,) + S)", "repr(S + S)", "repr(S * 2)", "repr(2 * S)", "repr(S[:1] * 3)",
    "S == (2, 3, 4)", "S == [2, 3, 4]", "S != [2, 3, 4]", "hash(S) == hash((2, 3, 4))", "{S: 1}[(2, 3, 4)]",
    "repr(T.Size([1, 2]))", "repr(T.Size(i for i in range(3)))", "repr(T.Size())", "repr(T.Size([True, 2]))",
    "repr(T.Size([np.int64(2)]))", "repr(T.Size([T.tensor([3])]))", "repr(T.Size(S))",
    "repr(pickle.loads(pickle.dumps(S)))", "repr(copy.deepcopy(S))", "S.count(3)", "S.index(4)",
    "S + [5]", "[5] + S", "S + (1.5,)", "S * 2.0", "T.Size([1.5])", "T.Size('ab')", "T.Size([None])",
    "T.Size([T.tensor(2.0)])", "T.Size(3)", "X.view(*S[1:], 2).shape", "T.zeros(S[:2]).shape",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_size_behaves_as_torchs(expression):
    def run(T):
        x = T.zeros(2, 3, 4)
        names = {"T": T, "S": x.shape, "X": x, "np": np, "pickle": pickle, "copy": copy}
        return raised(lambda: eval(expression, names)) or ("value", repr(eval(expression, names)))

    assert run(scriptc) == run(torch)


def test_size_kinds_of_results():
    s = scriptc.zeros(2, 3).shape
    assert all(type(r) is scriptc.Size for r in (s[1:], s + (1,), (1,) + s, s * 2, 2 * s, scriptc.Size(s)))
    assert type(s[0]) is int and type(scriptc.Size([np.int32(4)])[0]) is int
