"""An eager call's arguments checked against the op's schema: a non-Tensor where a Tensor belongs, a string
where a number belongs, raise torch's TypeError in torch's words, never numpy's or Python's complaint
(checked against torch 2.13)."""

from __future__ import annotations

import re

import pytest

import scriptc
from scriptc import ops
from scriptc.ops.schema import FACTORY, RANDOM
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

_SIMPLE = {"Tensor": lambda T: T.ones(2, 3), "int": lambda T: 1, "float": lambda T: 0.5, "bool": lambda T: False,
           "Scalar": lambda T: 1, "Tensor|Scalar": lambda T: T.ones(2, 3), "List[int]": lambda T: [1]}


def _public_tensor_ops():
    """Public functions (one per name) whose first argument is a required Tensor and whose other required
    arguments are of simple types."""
    found = {}
    for op in ops.all_ops():
        if (not op.function or op.inplace_of is not None or op.kind in (FACTORY, RANDOM)
                or op.base_name in found or not hasattr(torch, op.base_name)):
            continue
        required = [a for a in op.schema.args if not a.has_default]
        if required and str(required[0].type) == "Tensor" and all(str(a.type) in _SIMPLE for a in required):
            found[op.base_name] = [str(a.type) for a in required]
    return sorted(found.items())


@pytest.mark.parametrize("bad", [None, "abc", [1.0, 2.0]], ids=["None", "str", "list"])
@pytest.mark.parametrize("name,types", _public_tensor_ops(), ids=lambda v: v if isinstance(v, str) else "")
def test_non_tensor_input_raises_torchs_type_error(name, types, bad):
    def call(T):
        args = [_SIMPLE[t](T) for t in types]
        args[0] = bad
        return getattr(T, name)(*args)

    ours = raised(lambda: call(scriptc))
    assert ours is not None and ours[0] is TypeError, ours
    # (a few of torch's Python-level functions raise AttributeError here; its parsed ones, this message)
    expected = raised(lambda: call(torch))
    if expected[1].startswith(f"{name}(): argument 'input' (position 1) must be Tensor"):
        assert ours == expected


CALLS = [
    "T.add(T.ones(2), 'a')",
    "T.mul(T.ones(2), None)",
    "T.matmul(T.ones(2, 2), None)",
    "T.polygamma(1, None)",
    "T.max(None)",
    "T.median('x')",
    "T.threshold(T.ones(2), 'x', 0.0)",
    "T.cat([T.ones(2), 'x'])",
    "T.cat([T.ones(2), [1.0, 2.0]])",
    "T.nn.functional.relu(None)",
    "T.softmax(None, 0)",
    "T.maximum(T.ones(2), 2.0)",  # (no Scalar overload: a number is refused where other ops take it)
    "T.logical_and(T.ones(2), True)",
    "T.hypot(T.ones(2), 1)",
    "T.fmin(T.ones(2), 0.5)",
    # (an item of a list of ints: the first is checked, the others unpacked, each in torch's own words)
    "T.zeros([2.5, 2])",
    "T.zeros([2, 'a'])",
    "T.flip(T.ones(2), [True])",
    "T.sum(T.ones(2, 3), [0, 1.5])",
    "T.permute(T.ones(2, 3), [0, None])",
]


# torch lists its overloads here; scriptc's overloads differ, so only the exception type is compared
TYPE_ONLY = [
    "T.ones(2).add('a')",
    "T.ones(2).mul(None)",
    "T.sum(T.ones(2, 3), 'x')",
    "T.where(T.ones(2) > 0, T.ones(2), 'x')",
    "T.stack([T.ones(2), None])",
    "T.ones(2, 3).sum(1.5)",
    "T.ones(2, 3).sum(T.tensor(1.0))",
    "T.ones(2, 3).softmax(T.tensor([1]))",
    "T.dropout(T.ones(2), 0.5, 1)",
    "T.ones(2).roll(True)",
]


@pytest.mark.parametrize("source", TYPE_ONLY)
def test_bad_argument_raises_torchs_type(source):
    expected = raised(lambda: eval(source, {"T": torch}))
    ours = raised(lambda: eval(source, {"T": scriptc}))
    assert ours is not None and issubclass(ours[0], expected[0]), (ours, expected)


@pytest.mark.parametrize("source", CALLS)
def test_bad_argument_matches_torch(source):
    expected = raised(lambda: eval(source, {"T": torch}))
    assert expected is not None
    ours = raised(lambda: eval(source, {"T": scriptc}))
    assert ours is not None and issubclass(ours[0], expected[0]), (ours, expected)
    assert ours[1] == expected[1]


def test_numbers_and_one_element_tensors_still_pass_as_scalars():
    import numpy as np

    x = scriptc.ones(3)
    assert scriptc.add(x, np.float32(2.0)).tolist() == [3.0, 3.0, 3.0]
    assert scriptc.add(x, scriptc.tensor(2.0)).tolist() == [3.0, 3.0, 3.0]
    assert scriptc.threshold(x, np.float64(0.5), 0.0).tolist() == [1.0, 1.0, 1.0]


# an int argument given as a numpy integer or a 0-d integer tensor, which torch's parser reads as an int
INTEGER_LIKE = [
    "X.sum(np.int64(1))", "X.sum(T.tensor(1))", "T.softmax(X, np.int64(1))", "T.softmax(X, T.tensor(1))",
    "X.narrow(np.int64(1), np.int64(0), np.int64(2))", "X.select(np.int32(0), np.int64(1))",
    "X.reshape(np.int64(3), np.int64(2))", "X.cumsum(np.int64(0))", "X.transpose(np.int64(0), 1)",
    "X.argmax(np.int64(1))", "X.max(np.int64(1))[0]", "X.chunk(np.int64(2), 1)[0]",
    "T.cat([X, X], np.int64(1))", "X.index_select(np.int64(1), T.tensor([0]))", "X.mean([np.int64(1), np.int32(0)])",
    "X.roll(np.int64(1), np.int64(1))",
]


@pytest.mark.parametrize("source", INTEGER_LIKE)
def test_numpy_integers_and_integer_tensors_pass_as_ints(source):
    import numpy as np

    def run(T):
        return eval(source, {"T": T, "np": np, "X": T.arange(6.0).reshape(2, 3)}).tolist()

    np.testing.assert_allclose(run(scriptc), run(torch), rtol=1e-6)


@pytest.mark.parametrize("source", [
    "x * np.float64(3)", "np.float64(2) * x", "x / np.sqrt(np.float64(4))", "x - np.float32(0.5)",
    "np.int64(3) * x", "x.long() * np.float64(1.5)", "x.long() + np.int32(2)", "x > np.float64(0.5)",
    "T.pow(x, np.float64(2))", "np.float64(2) ** x", "T.where(x > 0, x, np.float64(2))",
    "x.half() * np.float64(2)", "T.full((2,), 1, dtype=T.float16).add(np.float64(1.5))",
])
def test_numpy_scalars_promote_as_python_numbers(source):
    """A numpy scalar is the Python number it holds, as in torch: x / np.sqrt(d) stays float32."""
    import numpy as np

    def run(T):
        out = eval(source, {"T": T, "np": np, "x": T.arange(4, dtype=T.float32)})
        return str(out.dtype).split(".")[-1], out.tolist()
    assert run(scriptc) == run(torch)


# a Python bool where torch's parser wants an int, an int or float where it wants a bool: refused in torch's
# words (isinstance(True, int) holds, so a bool must not pass the int check)
ARGUMENT_KINDS = [
    "X.topk(True)", "X.select(0, True)", "X.cumsum(True)", "X.flatten(True)", "X.softmax(True)",
    "X.unsqueeze(True)", "X.transpose(False, True)", "X.chunk(True)", "X.tril(True)", "X.gather(True, I)",
    "T.cat([X, X], True)", "X.index_select(True, T.tensor([0]))", "X.diag(True)", "X.kthvalue(True)",
    "X.unflatten(True, (2, 2))", "T.randint(True, (2,))", "X.sum(0, 1)", "X.sum(0, 1.0)", "X.argmax(0, 1)",
    "X.logsumexp(True)",
]


@pytest.mark.parametrize("source", ARGUMENT_KINDS)
def test_argument_of_the_wrong_kind_raises_torchs_type_error(source):
    def run(T):
        return raised(lambda: eval(source, {"T": T, "X": T.ones(3, 4), "I": T.zeros(3, 4, dtype=T.long)}))

    expected, ours = run(torch), run(scriptc)
    assert expected[0] is TypeError and ours is not None and ours[0] is TypeError, ours
    if "invalid combination" not in expected[1]:
        # (a method's position counts self here, not in torch's)
        assert re.sub(r" \(position \d\)", "", ours[1]) == re.sub(r" \(position \d\)", "", expected[1])


def test_bools_still_pass_where_torch_takes_numbers():
    x = scriptc.ones(3)
    assert x.mul(True).tolist() == [1.0, 1.0, 1.0] and x.pow(False).tolist() == [1.0, 1.0, 1.0]
    assert x.clamp(True).tolist() == [1.0, 1.0, 1.0] and scriptc.arange(True).tolist() == [0]
    assert x.sum(0, True).shape == (1,)
