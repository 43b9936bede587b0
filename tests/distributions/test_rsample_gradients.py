"""Reparameterized samples pass gradients to the parameters: exactly for location-scale families, in
expectation for Gamma, Beta and Dirichlet (implicit reparameterization)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import distributions as D

torch = pytest.importorskip("torch")


def _param(value):
    return scriptc.tensor(value, dtype=scriptc.float64, requires_grad=True)


def test_normal_and_uniform_rsample_gradients_are_the_noise():
    loc, scale = _param([0.5, -1.0]), _param([2.0, 0.5])
    scriptc.manual_seed(0)
    x = D.Normal(loc, scale).rsample((1000,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0])
    np.testing.assert_allclose(scale.grad.numpy(), ((x.detach() - loc.detach()) / scale.detach()).sum(0).numpy())
    low, high = _param([0.0]), _param([2.0])
    u = D.Uniform(low, high).rsample((500,))
    u.sum().backward()
    fraction = ((u.detach() - low.detach()) / (high.detach() - low.detach())).sum().item()
    np.testing.assert_allclose(high.grad.numpy(), [fraction])
    np.testing.assert_allclose(low.grad.numpy(), [500 - fraction])


def test_multivariate_normal_rsample_gradient_reaches_loc_and_scale_tril():
    loc = _param([0.0, 1.0])
    tril = scriptc.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=scriptc.float64, requires_grad=True)
    x = D.MultivariateNormal(loc, scale_tril=tril).rsample((200,))
    (x ** 2).mean(0).sum().backward()
    assert loc.grad is not None and tril.grad is not None
    # d/dL E|loc + L eps|^2 = 2 L: the sample estimate is close to it
    np.testing.assert_allclose(tril.grad.numpy(), 2 * np.tril(tril.detach().numpy()), atol=0.6)


@pytest.mark.parametrize("name,make,mean", [
    ("Gamma", lambda a: D.Gamma(a, scriptc.tensor(2.0, dtype=scriptc.float64)), lambda a: a / 2),
    ("Beta", lambda a: D.Beta(a, scriptc.tensor(1.5, dtype=scriptc.float64)), lambda a: a / (a + 1.5)),
    ("Dirichlet", lambda a: D.Dirichlet(scriptc.stack([a, scriptc.tensor(2.0, dtype=scriptc.float64)])),
     lambda a: a / (a + 2.0)),
])
@pytest.mark.parametrize("alpha", [0.4, 3.0])
def test_implicit_reparameterization_gradient_of_the_mean(name, make, mean, alpha):
    concentration = _param(alpha)
    scriptc.manual_seed(1)
    samples = make(concentration).rsample((20000,))
    first = samples[..., 0] if name == "Dirichlet" else samples
    first.mean().backward()
    a = scriptc.tensor(alpha, dtype=scriptc.float64, requires_grad=True)
    mean(a).backward()
    np.testing.assert_allclose(concentration.grad.item(), a.grad.item(), rtol=0.1, atol=0.01)
