"""torch.functional's einsum sublist form and histogramdd, against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)


def _both(*shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    return [scriptc.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("shapes, sublists", [
    (((2, 3), (3, 4)), ([0, 1], [1, 2], [0, 2])),
    (((2, 3), (3, 4)), ([0, 1], [1, 2])),
    (((5, 2, 3), (3, 4)), ([Ellipsis, 1], [1, 2], [Ellipsis, 2])),
    (((2, 4), (4, 5)), ([27, 3], [3, 51], [51, 27])),
])
def test_sublist_form_matches_torch(shapes, sublists):
    ours, theirs = _both(*shapes)
    args_ours = [x for pair in zip(ours, sublists) for x in pair] + list(sublists[len(shapes):])
    args_theirs = [x for pair in zip(theirs, sublists) for x in pair] + list(sublists[len(shapes):])
    np.testing.assert_allclose(scriptc.einsum(*args_ours).numpy(), torch.einsum(*args_theirs).numpy(), rtol=1e-12)


def test_sublist_form_keeps_gradients():
    (a, b), (ta, tb) = _both((2, 3), (3, 4))
    for t in (a, b, ta, tb):
        t.requires_grad_(True)
    scriptc.einsum(a, [0, 1], b, [1, 2], [0, 2]).sum().backward()
    torch.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("code", [
    "T.einsum(T.ones(2, 3), [0, 60], T.ones(3, 4), [60, 2])",
    "T.einsum(T.ones(2, 3))",
    "T.einsum(T.ones(2, 3), [0, 1, 2])",
])
def test_sublist_errors_match_torch(code):
    with pytest.raises(Exception) as theirs:
        eval(code, {"T": torch})
    with pytest.raises(type(theirs.value)) as ours:
        eval(code, {"T": scriptc})
    assert str(ours.value) == str(theirs.value)


_POINTS = rng.standard_normal((50, 3)).astype(np.float32)
_WEIGHTS = rng.random(50).astype(np.float32)
_INTEGRAL = rng.integers(0, 5, (40, 2)).astype(np.float32)  # values on the bin edges


@pytest.mark.parametrize("call", [
    lambda T: T.histogramdd(T.tensor(_POINTS), bins=4),
    lambda T: T.histogramdd(T.tensor(_POINTS), bins=[3, 4, 5], weight=T.tensor(_WEIGHTS)),
    lambda T: T.histogramdd(T.tensor(_POINTS), bins=(2, 2, 2), range=[-1, 1, -1.0, 1, 0, 1], weight=T.tensor(_WEIGHTS),
                            density=True),
    lambda T: T.histogramdd(T.tensor(_POINTS), bins=[T.tensor([-3.0, 0, 1, 3]), T.tensor([-1.0, 1]),
                                                     T.tensor([-2.0, -1, 0, 1, 2])]),
    lambda T: T.histogramdd(T.tensor(_POINTS.reshape(5, 10, 3)), bins=3),
    lambda T: T.histogramdd(T.tensor(_INTEGRAL), bins=[5, 3]),
    lambda T: T.histogramdd(T.tensor(_INTEGRAL.astype(np.float64)), bins=[5, 3], density=True),
    lambda T: T.histogramdd(T.ones(3, 2), bins=2),
    lambda T: T.histogramdd(T.zeros(0, 2), bins=2),
    lambda T: T.histogramdd(T.tensor(_INTEGRAL), bins=[T.tensor([2.0, 1, 0]), T.tensor([0.0, 3])]),
])
def test_histogramdd_matches_torch(call):
    expected, actual = call(torch), call(scriptc)
    np.testing.assert_allclose(actual.hist.numpy(), expected.hist.numpy(), rtol=1e-6)
    assert actual.hist.dtype.name == str(expected.hist.dtype).removeprefix("torch.")
    assert isinstance(actual.bin_edges, tuple) and len(actual.bin_edges) == len(expected.bin_edges)
    for ours, theirs in zip(actual.bin_edges, expected.bin_edges):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("code", [
    "T.histogramdd(x, bins=[2, 2, 2])",
    "T.histogramdd(x, bins=[2, 0])",
    "T.histogramdd(x.long(), bins=2)",
    "T.histogramdd(x, bins=2, range=[0.0, 1.0])",
    "T.histogramdd(x, bins=2, range=[1.0, 0.0, 0, 1])",
    "T.histogramdd(x, bins=2, range=[0.0, float('inf'), 0, 1])",
    "T.histogramdd(T.tensor([[float('nan'), 1]]), bins=2)",
    "T.histogramdd(x, bins=2, weight=T.ones(3))",
    "T.histogramdd(x, bins=2, weight=T.ones(4).double())",
    "T.histogramdd(x, bins=[T.tensor([0.0, 1, 2])])",
    "T.histogramdd(x, bins=[T.tensor([[0.0, 1]]), T.tensor([0.0, 3])])",
    "T.histogramdd(x, bins=[T.tensor([0.0, 1, 2]).double(), T.tensor([0.0, 3])])",
    "T.histogramdd(x, bins=[T.tensor([0.0]), T.tensor([0.0, 3])])",
    "T.histogramdd(T.ones(5), bins=4)",
])
def test_histogramdd_errors_match_torch(code):
    def run(T):
        return raised(lambda: eval(code, {"T": T, "x": T.tensor([[0.0, 1], [1, 0], [2, 0], [2, 2]])}))
    expected = run(torch)
    assert expected is not None and run(scriptc) == expected
