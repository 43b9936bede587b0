"""Each distribution against torch 2.13: shapes, moments, log_prob, cdf/icdf, entropy, support, expand."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.distributions.pairs import Draw, as_backend, assert_close, build

torch = pytest.importorskip("torch")

draw = Draw(0)
rng = draw.rng
F = np.float64
positive, real, simplex, unit = draw.positive, draw.real, draw.simplex, draw.unit
lower_cholesky, covariance = draw.lower_cholesky, draw.positive_definite


# name, parameters, values to score (log_prob and cdf), whether cdf and icdf exist
CASES = [
    ("Normal", dict(loc=real(3), scale=positive(3)), real(4, 3), True),
    ("Normal", dict(loc=real(2, 1), scale=positive(3)), real(2, 3), True),
    ("Uniform", dict(low=real(3), high=real(3) + 3.0), None, True),
    ("Categorical", dict(probs=simplex(2, 4)), np.array([[0, 3], [2, 1]]), False),
    ("Categorical", dict(logits=real(3, 5)), np.array([4, 0, 2]), False),
    ("OneHotCategorical", dict(probs=simplex(3, 4)), np.eye(4, dtype=F)[[0, 3, 1]], False),
    ("Bernoulli", dict(probs=unit(4)), (rng.random((2, 4)) < 0.5).astype(F), False),
    ("Bernoulli", dict(logits=real(3)), np.array([1.0, 0.0, 1.0]), False),
    ("Exponential", dict(rate=positive(3)), positive(5, 3), True),
    ("Laplace", dict(loc=real(3), scale=positive(3)), real(4, 3), True),
    ("Gamma", dict(concentration=positive(3) * 2, rate=positive(3)), positive(4, 3), False),
    ("Beta", dict(concentration1=positive(3), concentration0=positive(3) * 2), unit(4, 3), False),
    ("Dirichlet", dict(concentration=positive(2, 3)), simplex(4, 2, 3), False),
    ("LogNormal", dict(loc=real(3) * 0.3, scale=positive(3) * 0.5), positive(4, 3), True),
    ("MultivariateNormal", dict(loc=real(2, 3), scale_tril=lower_cholesky(2, 3)), real(4, 2, 3), False),
    ("MultivariateNormal", dict(loc=real(3), covariance_matrix=covariance(2, 3)), real(5, 2, 3), False),
    ("MultivariateNormal", dict(loc=real(3), precision_matrix=covariance(3)), real(4, 3), False),
]


def _ids(case):
    return case[0] + "-" + ",".join(case[1])


def _values(name, params, values, dist):
    if values is not None:
        return values
    low, high = params["low"], params["high"]
    return (low + (high - low) * rng.random((4,) + low.shape)).astype(F)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_matches_torch(case):
    name, params, values, has_cdf = case
    ours, theirs = build(scriptc, name, params), build(torch, name, params)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    for prop in ("mean", "variance", "stddev", "mode"):
        assert_close(getattr(ours, prop), getattr(theirs, prop), what=prop)
    assert_close(ours.entropy(), theirs.entropy(), what="entropy")
    assert_close(ours.perplexity(), theirs.perplexity(), what="perplexity")
    values = _values(name, params, values, ours)
    assert_close(ours.log_prob(as_backend(scriptc, values)), theirs.log_prob(as_backend(torch, values)),
                 what="log_prob")
    if has_cdf:
        cdf = ours.cdf(as_backend(scriptc, values))
        assert_close(cdf, theirs.cdf(as_backend(torch, values)), what="cdf")
        assert_close(ours.icdf(cdf), values, rtol=1e-6, what="icdf")
    if ours.has_enumerate_support:
        assert_close(ours.enumerate_support(), theirs.enumerate_support(), what="enumerate_support")
        assert_close(ours.enumerate_support(False), theirs.enumerate_support(False), what="enumerate_support")
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours.support).replace("scriptc.", "torch.") == repr(theirs.support)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_samples_have_the_shape_and_moments_of_torch(case):
    name, params, _, _ = case
    ours, theirs = build(scriptc, name, params), build(torch, name, params)
    samples = ours.sample((4000,))
    assert tuple(samples.shape) == tuple(theirs.sample((4000,)).shape)
    assert not samples.requires_grad
    mean, std = theirs.mean.numpy(), theirs.stddev.numpy()
    if np.all(np.isfinite(mean)):
        np.testing.assert_allclose(samples.numpy().mean(0), mean, atol=float(5 * std.max() / np.sqrt(4000)))
    assert bool(ours.support.check(samples).all())


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_expand_broadcasts_the_parameters(case):
    name, params, _, _ = case
    ours, theirs = build(scriptc, name, params), build(torch, name, params)
    shape = (2,) + tuple(theirs.batch_shape)
    big, big_t = ours.expand(shape), theirs.expand(shape)
    assert type(big) is type(ours) and tuple(big.batch_shape) == tuple(big_t.batch_shape)
    assert_close(big.entropy(), big_t.entropy(), what="entropy")
    assert tuple(big.sample((3,)).shape) == tuple(big_t.sample((3,)).shape)
