"""kl_divergence for the pairs torch registers for the discrete, heavy-tailed, extreme-value and
low-rank families, against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import distributions as D
from tests.distributions.pairs import Draw, assert_close, build

torch = pytest.importorskip("torch")

draw = Draw(3)
pos, real, unit, tril = draw.positive, draw.real, draw.unit, draw.lower_cholesky


PARAMS = {
    "Normal": lambda: dict(loc=real(3), scale=pos(3)),
    "Uniform": lambda: dict(low=real(3) - 2.0, high=real(3) + 2.0),
    "Bernoulli": lambda: dict(probs=unit(3)),
    "Exponential": lambda: dict(rate=pos(3)),
    "Laplace": lambda: dict(loc=real(3), scale=pos(3)),
    "Gamma": lambda: dict(concentration=pos(3), rate=pos(3)),
    "Beta": lambda: dict(concentration1=pos(3), concentration0=pos(3)),
    "Binomial": lambda: dict(total_count=np.array([5.0, 8.0, 8.0]), probs=unit(3)),
    "Poisson": lambda: dict(rate=pos(3) * 2),
    "Geometric": lambda: dict(probs=unit(3)),
    "Cauchy": lambda: dict(loc=real(3), scale=pos(3)),
    "Gumbel": lambda: dict(loc=real(3), scale=pos(3)),
    "HalfNormal": lambda: dict(scale=pos(3)),
    "Pareto": lambda: dict(scale=pos(3), alpha=np.array([0.8, 1.7, 3.5])),
    "MultivariateNormal": lambda: dict(loc=real(2, 3), scale_tril=tril(2, 3)),
    "ContinuousBernoulli": lambda: dict(probs=np.array([0.2, 0.4995, 0.8])),
    "LowRankMultivariateNormal": lambda: dict(loc=real(2, 3), cov_factor=real(2, 3, 2), cov_diag=pos(3)),
}
# q's Binomial has total_count <= p's so that the pair is defined; a Pareto q sits below p's support
SPECIAL = {("Binomial", "Binomial"): (dict(total_count=np.array([5.0, 8.0, 9.0]), probs=unit(3)),
                                      dict(total_count=np.array([5.0, 8.0, 8.0]), probs=unit(3))),
           ("Uniform", "Pareto"): (dict(low=np.array([0.5, 0.1, 2.0]), high=np.array([1.5, 1.0, 3.0])),
                                   dict(scale=np.array([0.4, 0.5, 1.0]), alpha=pos(3))),
           ("Uniform", "ContinuousBernoulli"): (dict(low=np.array([0.1, 0.0, 0.3]), high=np.array([0.5, 0.7, 1.0])),
                                                PARAMS["ContinuousBernoulli"]()),
           ("ContinuousBernoulli", "Uniform"): (PARAMS["ContinuousBernoulli"](),
                                                dict(low=np.array([-1.0, 0.0, 0.5]), high=np.array([2.0, 1.0, 3.0]))),
           ("Pareto", "Pareto"): (dict(scale=np.array([0.6, 1.0, 2.0]), alpha=pos(3)),
                                  dict(scale=np.array([0.5, 1.5, 2.0]), alpha=pos(3)))}
PAIRS = [("Binomial", "Binomial"), ("Poisson", "Poisson"), ("Geometric", "Geometric"), ("Cauchy", "Cauchy"),
         ("Gumbel", "Gumbel"), ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"),
         ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
         ("MultivariateNormal", "LowRankMultivariateNormal"), ("LowRankMultivariateNormal", "MultivariateNormal"),
         ("Bernoulli", "Poisson"), ("Exponential", "Gumbel"), ("Gamma", "Gumbel"), ("Gumbel", "Normal"),
         ("Normal", "Gumbel"), ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
         ("Uniform", "Gumbel"), ("Uniform", "Pareto"), ("Poisson", "Bernoulli"), ("Poisson", "Binomial"),
         ("Beta", "Pareto"), ("Exponential", "Pareto"), ("Gamma", "Pareto"), ("Laplace", "Pareto"),
         ("Normal", "Pareto"), ("Pareto", "Beta"), ("Pareto", "Uniform"), ("Gumbel", "Beta"),
         ("Gumbel", "Exponential"), ("Gumbel", "Gamma"), ("Gumbel", "Pareto"), ("Gumbel", "Uniform"),
         ("ContinuousBernoulli", "ContinuousBernoulli"), ("Beta", "ContinuousBernoulli"),
         ("Uniform", "ContinuousBernoulli"), ("ContinuousBernoulli", "Exponential"),
         ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"), ("ContinuousBernoulli", "Pareto"),
         ("Exponential", "ContinuousBernoulli"), ("Gamma", "ContinuousBernoulli"), ("Laplace", "ContinuousBernoulli"),
         ("Normal", "ContinuousBernoulli"), ("Pareto", "ContinuousBernoulli"), ("Gumbel", "ContinuousBernoulli")]


@pytest.mark.parametrize("p_name,q_name", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_divergence_matches_torch(p_name, q_name):
    p_params, q_params = SPECIAL.get((p_name, q_name), (PARAMS[p_name](), PARAMS[q_name]()))
    ours = D.kl_divergence(build(scriptc, p_name, p_params), build(scriptc, q_name, q_params))
    theirs = torch.distributions.kl_divergence(build(torch, p_name, p_params), build(torch, q_name, q_params))
    assert_close(ours, theirs, rtol=1e-6, what=f"KL({p_name} || {q_name})")


def test_binomial_kl_needs_the_larger_total_count_on_the_left():
    p = D.Binomial(scriptc.tensor([3.0]), probs=scriptc.tensor([0.5]))
    q = D.Binomial(scriptc.tensor([4.0]), probs=scriptc.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="KL between Binomials where q.total_count > p.total_count"):
        D.kl_divergence(p, q)


def test_lowrank_kl_rejects_different_event_shapes():
    p = D.LowRankMultivariateNormal(scriptc.zeros(2), scriptc.ones(2, 1), scriptc.ones(2))
    q = D.LowRankMultivariateNormal(scriptc.zeros(3), scriptc.ones(3, 1), scriptc.ones(3))
    p_t = torch.distributions.LowRankMultivariateNormal(torch.zeros(2), torch.ones(2, 1), torch.ones(2))
    q_t = torch.distributions.LowRankMultivariateNormal(torch.zeros(3), torch.ones(3, 1), torch.ones(3))
    with pytest.raises(ValueError) as theirs:
        torch.distributions.kl_divergence(p_t, q_t)
    with pytest.raises(ValueError) as ours:
        D.kl_divergence(p, q)
    assert str(ours.value) == str(theirs.value)
