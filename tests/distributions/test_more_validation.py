"""The newer families' argument and sample validation (torch's messages), constructor errors, and
reparameterized-sample gradients."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import distributions as D
from tests.distributions.pairs import assert_raises_as_torch, as_backend, build

torch = pytest.importorskip("torch")

INVALID = [
    ("Poisson", dict(rate=np.array([1.0, -0.5]))),
    ("Binomial", dict(total_count=np.array([2.5]), probs=np.array([0.5]))),
    ("Binomial", dict(total_count=np.array([3.0]), probs=np.array([1.5]))),
    ("NegativeBinomial", dict(total_count=np.array([2.0]), probs=np.array([1.0]))),
    ("Geometric", dict(probs=np.array([0.0, 0.5]))),
    ("Cauchy", dict(loc=np.zeros(2), scale=np.array([1.0, 0.0]))),
    ("HalfNormal", dict(scale=np.array([-1.0]))),
    ("HalfCauchy", dict(scale=np.array([-1.0]))),
    ("Gumbel", dict(loc=np.zeros(1), scale=np.array([-1.0]))),
    ("StudentT", dict(df=np.array([-1.0]))),
    ("Chi2", dict(df=np.array([0.0]))),
    ("Weibull", dict(scale=np.array([1.0]), concentration=np.array([-2.0]))),
    ("Pareto", dict(scale=np.array([1.0]), alpha=np.array([0.0]))),
    ("FisherSnedecor", dict(df1=np.array([1.0]), df2=np.array([-1.0]))),
    ("Kumaraswamy", dict(concentration1=np.array([1.0]), concentration0=np.array([-1.0]))),
    ("InverseGamma", dict(concentration=np.array([-1.0]), rate=np.array([1.0]))),
    ("Multinomial", dict(total_count=3, probs=np.array([-0.5, 1.5]))),
    ("LowRankMultivariateNormal", dict(loc=np.zeros(2), cov_factor=np.ones((2, 1)), cov_diag=np.array([1.0, -1.0]))),
]


@pytest.mark.parametrize("name,params", INVALID, ids=[n for n, _ in INVALID])
def test_invalid_parameters_raise_torch_message(name, params):
    assert_raises_as_torch(torch, lambda m: build(m, name, params))


SAMPLE_ERRORS = [
    ("Poisson", dict(rate=np.ones(2)), np.array([1.5, 1.0])),
    ("Binomial", dict(total_count=np.full(2, 3.0), probs=np.full(2, 0.5)), np.array([4.0, 1.0])),
    ("Geometric", dict(probs=np.full(2, 0.5)), np.array([-1.0, 1.0])),
    ("HalfNormal", dict(scale=np.ones(2)), np.array([-1.0, 1.0])),
    ("Pareto", dict(scale=np.full(2, 2.0), alpha=np.ones(2)), np.array([1.0, 3.0])),
    ("Multinomial", dict(total_count=3, probs=np.full(2, 0.5)), np.array([2.0, 2.0])),
    ("LowRankMultivariateNormal", dict(loc=np.zeros(2), cov_factor=np.ones((2, 1)), cov_diag=np.ones(2)),
     np.zeros(3)),
]


@pytest.mark.parametrize("name,params,value", SAMPLE_ERRORS, ids=[n for n, _, _ in SAMPLE_ERRORS])
def test_invalid_values_raise_torch_message(name, params, value):
    assert_raises_as_torch(torch, lambda m: build(m, name, params).log_prob(as_backend(m, value)))


CONSTRUCTOR_ERRORS = [
    (lambda m: m.distributions.Binomial(3), ValueError),
    (lambda m: m.distributions.Multinomial(m.tensor([2, 3]), probs=m.ones(2) / 2), NotImplementedError),
    (lambda m: m.distributions.LowRankMultivariateNormal(m.tensor(0.0), m.ones(1, 1), m.ones(1)), ValueError),
    (lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(2), m.ones(2), m.ones(2)), ValueError),
    (lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(2), m.ones(3, 1), m.ones(2)), ValueError),
    (lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(2), m.ones(2, 1), m.ones(3)), ValueError),
    (lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(3, 2), m.ones(2, 2, 1), m.ones(2)), ValueError),
    (lambda m: m.distributions.MixtureSameFamily(m.distributions.Normal(0.0, 1.0), m.distributions.Normal(0.0, 1.0)),
     ValueError),
    (lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(m.ones(3) / 3), "normal"), ValueError),
    (lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(m.ones(3) / 3),
                                                 m.distributions.Normal(m.zeros(4), m.ones(4))), ValueError),
    (lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(m.ones(2, 3) / 3),
                                                 m.distributions.Normal(m.zeros(4, 3), m.ones(4, 3))), ValueError),
    (lambda m: m.distributions.Binomial(m.tensor([2.0, 3.0]), m.tensor([0.5, 0.5])).entropy(), NotImplementedError),
]


@pytest.mark.parametrize("index", range(len(CONSTRUCTOR_ERRORS)))
def test_constructor_errors_as_torch(index):
    make, error = CONSTRUCTOR_ERRORS[index]
    assert_raises_as_torch(torch, make, error)


def _param(value):
    return scriptc.tensor(value, dtype=scriptc.float64, requires_grad=True)


def test_location_scale_rsample_gradients_are_the_standardized_noise():
    for family in (D.Cauchy, D.Gumbel):
        loc, scale = _param([0.5, -1.0]), _param([2.0, 0.5])
        x = family(loc, scale).rsample((300,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [300.0, 300.0])
        np.testing.assert_allclose(scale.grad.numpy(),
                                   ((x.detach() - loc.detach()) / scale.detach()).sum(0).numpy(), rtol=1e-9)
    scale = _param([2.0])
    x = D.HalfNormal(scale).rsample((100,))
    x.sum().backward()
    np.testing.assert_allclose(scale.grad.numpy(), (x.detach() / 2.0).sum(0).numpy())


def test_relaxed_and_lowrank_rsample_reach_their_parameters():
    logits, temperature = _param([0.1, 0.5, -0.3]), _param(0.5)
    y = D.RelaxedOneHotCategorical(temperature, logits=logits).rsample((50,))
    (y[..., 0] * 3).sum().backward()
    assert logits.grad is not None and temperature.grad is not None
    loc, factor, diag = _param([0.0, 1.0]), _param([[1.0], [0.5]]), _param([1.0, 2.0])
    z = D.LowRankMultivariateNormal(loc, factor, diag).rsample((400,))
    (z ** 2).mean(0).sum().backward()
    # d/dW E|loc + W e + D^1/2 d|^2 = 2 W
    np.testing.assert_allclose(factor.grad.numpy(), 2 * factor.detach().numpy(), atol=0.4)
    assert diag.grad is not None and loc.grad is not None


def test_student_t_rsample_mean_gradient():
    df, loc = _param(5.0), _param(1.0)
    scriptc.manual_seed(3)
    x = D.StudentT(df, loc, 2.0).rsample((5000,))
    x.mean().backward()
    np.testing.assert_allclose(loc.grad.item(), 1.0)
    assert abs(df.grad.item()) < 0.1  # the mean does not depend on df
