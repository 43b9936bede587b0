"""torch.cov, corrcoef, trapezoid, cumulative_trapezoid, vander and combinations against torch 2.13: values,
weights, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)
A, V = rng.standard_normal((3, 6)), rng.standard_normal(6)
X, F, W = np.sort(rng.uniform(0, 5, 6)), rng.integers(1, 4, 6), rng.uniform(0.1, 1, 6)

CALLS = [
    "T.cov(a)", "T.cov(v)", "T.cov(a, correction=0)", "T.cov(a, fweights=T.tensor(F))", "T.cov(a, aweights=T.tensor(W))",
    "T.cov(a, fweights=T.tensor(F), aweights=T.tensor(W), correction=2)", "T.cov(T.tensor(A).long())",
    "T.corrcoef(a)", "T.corrcoef(v)", "T.trapezoid(a)", "T.trapezoid(a, T.tensor(X))", "T.trapezoid(a, dx=0.5, dim=0)",
    "T.trapezoid(a, a)", "T.cumulative_trapezoid(a)", "T.cumulative_trapezoid(a, T.tensor(X))",
    "T.cumulative_trapezoid(v, dx=2.0)",
]


@pytest.mark.parametrize("code", CALLS)
def test_matches_torch_with_gradients(code):
    results = []
    for T in (torch, scriptc):
        a, v = T.tensor(A, requires_grad=True), T.tensor(V, requires_grad=True)
        out = eval(code, {"T": T, "a": a, "v": v, "F": F, "W": W, "X": X, "A": A})
        weights = T.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        (out * weights).sum().backward() if out.requires_grad else None
        results.append((out.detach().numpy(), None if a.grad is None else a.grad.numpy()))
    (ours, our_grad), (theirs, their_grad) = results[1], results[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10 if ours.dtype == np.float64 else 1e-6, atol=1e-12)
    assert (our_grad is None) == (their_grad is None)
    if their_grad is not None:
        np.testing.assert_allclose(our_grad, their_grad, rtol=1e-10, atol=1e-12)


def test_cov_of_more_than_two_dims_raises_torch_error():
    with pytest.raises(RuntimeError) as theirs:
        torch.cov(torch.ones(2, 2, 2))
    with pytest.raises(RuntimeError) as ours:
        scriptc.cov(scriptc.ones(2, 2, 2))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("code", [
    "T.vander(T.tensor([1.0, 2.0, 3.0]))", "T.vander(T.tensor([1, 2, 3]), N=2, increasing=True)",
    "T.vander(T.tensor([1.5, -2.0]), N=4)", "T.vander(T.tensor([1.0, 2.0]), N=0)",
    "T.combinations(T.tensor([1, 2, 3]))", "T.combinations(T.tensor([1.0, 2.0]), r=2, with_replacement=True)",
    "T.combinations(T.tensor([1, 2, 3]), r=0)", "T.combinations(T.tensor([1, 2]), r=3)",
    "T.combinations(T.tensor([4, 5, 6, 7]), r=3)",
])
def test_vander_and_combinations_match_torch(code):
    ours, theirs = eval(code, {"T": scriptc}), eval(code, {"T": torch})
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("code", ["T.combinations(T.ones(2, 2))", "T.vander(T.ones(2, 2))"])
def test_vander_and_combinations_errors_match_torch(code):
    with pytest.raises(RuntimeError) as theirs:
        eval(code, {"T": torch})
    with pytest.raises(RuntimeError) as ours:
        eval(code, {"T": scriptc})
    assert str(ours.value) == str(theirs.value)
