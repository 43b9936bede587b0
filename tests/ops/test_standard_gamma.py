"""`_standard_gamma` is differentiable: its gradient formula against torch's on the same samples."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def test_standard_gamma_gradient_matches_torch():
    """The gradient formula of `_standard_gamma` (series for small samples, saddle point for large
    concentrations, a rational fit between) against torch's on the same samples."""
    alpha = np.repeat([0.05, 0.3, 0.9, 2.5, 7.0, 9.0, 40.0, 300.0], 50)
    a = scriptc.tensor(alpha, requires_grad=True)
    scriptc.manual_seed(2)
    sample = scriptc._standard_gamma(a)
    sample.sum().backward()
    expected = torch._standard_gamma_grad(torch.tensor(alpha), torch.from_numpy(sample.detach().numpy().copy()))
    np.testing.assert_allclose(a.grad.numpy(), expected.numpy(), rtol=1e-6, atol=1e-12)


def test_standard_gamma_gradient_is_zero_where_the_series_breaks_down():
    alpha = scriptc.tensor([1e-3, 1e-3], dtype=scriptc.float64, requires_grad=True)
    sample = scriptc._standard_gamma(alpha)
    sample.sum().backward()
    assert np.all(np.isfinite(alpha.grad.numpy()))
