"""Tensor methods that re-point or reshape storage (resize_, resize_as_, set_, as_strided_), layout
queries, in-place copies of pure ops, and torch's deprecated solver spellings, against torch 2.13."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(scriptc), fn(torch)


def assert_same(ours, theirs, strides: bool = True):
    """Equal values (and strides, where the layout is what the call decides rather than LAPACK's)."""
    if isinstance(theirs, torch.Tensor):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
        assert not strides or ours.stride() == theirs.stride()
    elif isinstance(theirs, tuple):
        for a, b in zip(ours, theirs):
            assert_same(a, b, strides)
    else:
        assert ours == theirs


@pytest.mark.parametrize("fn", [
    lambda T: T.arange(6.0).resize_(2, 2),
    lambda T: T.arange(6.0)[2:].resize_(2, 2),
    lambda T: T.zeros(2, 3).resize_as_(T.ones(6)),
    lambda T: T.zeros(3).set_(T.arange(4.0)),
    lambda T: T.zeros(3).set_(T.arange(9.0), 1, (2, 2), (3, 1)),
    lambda T: T.zeros(3).set_().shape,
    lambda T: T.arange(9.0).as_strided_((2, 2), (3, 1), 1),
    lambda T: T.zeros(2, 3, 4, 5).to(memory_format=T.channels_last).dim_order(),
    lambda T: T.zeros(2, 3).t().dim_order(),
    lambda T: T.zeros(2).new_empty_strided((2, 3), (1, 2)).stride(),
    lambda T: T.tensor([1.0, -2.0, 0.0]).sgn_(),
    lambda T: T.arange(4.0).cumsum_(0),
    lambda T: T.tensor([0, 3, 0, 1]).nonzero_static(size=3),
    lambda T: T.randn(2).is_neg(),
])
def test_layout_matches_torch(fn):
    ours, theirs = both(fn)
    assert_same(ours, theirs)


@pytest.mark.parametrize("fn", [
    lambda T: T.triangular_solve(T.ones(2, 1), T.tensor([[2.0, 1.0], [0.0, 3.0]])),
    lambda T: T.triangular_solve(T.ones(2, 2), T.tensor([[2.0, 0.0], [1.0, 3.0]]), upper=False, transpose=True),
    lambda T: T.tensor([[2.0, 1.0], [4.0, 3.0]]).lu(),
    lambda T: T.lu(T.tensor([[2.0, 1.0], [4.0, 3.0]]), get_infos=True),
    lambda T: T.lu_solve(T.ones(2, 1), *T.tensor([[2.0, 1.0], [4.0, 3.0]]).lu()),
    lambda T: T.tensor([[1.0, 0.5], [0.2, 1.0], [0.3, 0.4]]).orgqr(T.tensor([1.2, 0.4])),
])
def test_solvers_match_torch(fn):
    ours, theirs = both(fn)
    assert_same(ours, theirs, strides=False)


def test_resize_keeps_leading_values_when_growing_and_refuses_grad():
    for T in (scriptc, torch):
        x = T.arange(4.0)
        x.resize_(3, 3)
        assert x.flatten()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            T.ones(2, requires_grad=True).resize_(3)


def test_inplace_copies_record_gradient():
    for T in (scriptc, torch):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        y.cumsum_(0)
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 2.0, 1.0]


def test_deprecated_solvers_warn():
    # torch warns once per process (TORCH_WARN_ONCE), so only scriptc's side is checked here
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        scriptc.triangular_solve(scriptc.ones(2, 1), scriptc.eye(2))
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        scriptc.eye(2).lu()
