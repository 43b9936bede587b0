"""The discrete, heavy-tailed, low-rank, mixture and relaxed families against torch 2.13: shapes,
moments, log_prob, cdf/icdf, entropy (or torch's error for it), support, expand and samples."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.distributions.pairs import Draw, as_backend, assert_close, assert_same_outcome, numpy_of, outcome

torch = pytest.importorskip("torch")

draw = Draw(2)
positive, real, unit, simplex, counts = draw.positive, draw.real, draw.unit, draw.simplex, draw.counts
positive_definite, corr_cholesky = draw.positive_definite, draw.corr_cholesky


def family(name, **params):
    """A maker of `name` from numpy parameters for a backend module (torch or scriptc)."""
    return lambda m: getattr(m.distributions, name)(**as_backend(m, params))


def exp_relaxed(m):
    return m.distributions.relaxed_categorical.ExpRelaxedCategorical(*as_backend(m, (np.array(1.3), EXP_PROBS)))


def logit_relaxed(m):
    return m.distributions.relaxed_bernoulli.LogitRelaxedBernoulli(*as_backend(m, (np.array(0.8), None, LOGITS3)))


def mixture(m):
    mix = m.distributions.Categorical(logits=as_backend(m, MIX_LOGITS))
    components = m.distributions.Normal(*as_backend(m, (MIX_LOC, MIX_SCALE)))
    return m.distributions.MixtureSameFamily(mix, components)


def vector_mixture(m):
    mix = m.distributions.Categorical(probs=as_backend(m, MIX_PROBS))
    components = m.distributions.Independent(m.distributions.Normal(*as_backend(m, (VEC_LOC, VEC_SCALE))), 1)
    return m.distributions.MixtureSameFamily(mix, components)


MIX_LOGITS, MIX_LOC, MIX_SCALE = real(2, 3), real(2, 3) * 2, positive(2, 3)
MIX_PROBS, VEC_LOC, VEC_SCALE = simplex(3), real(3, 2), positive(3, 2)
RELAXED_LOGITS, EXP_PROBS, LOGITS3 = real(2, 4), simplex(4), real(3)
MULTI_PROBS = simplex(2, 4)

# maker, values to score, whether cdf/icdf exist
CASES = [
    ("Poisson", family("Poisson", rate=positive(3) * 3), counts(6, 4, 3), False),
    ("Binomial-probs", family("Binomial", total_count=np.full(3, 7.0), probs=unit(3)), counts(7, 4, 3), False),
    ("Binomial-logits", family("Binomial", total_count=np.array([[3.0], [9.0]]), logits=real(3)),
     counts(3, 2, 3), False),
    ("Multinomial", family("Multinomial", total_count=6, probs=MULTI_PROBS),
     np.array([[[1.0, 2.0, 3.0, 0.0], [0.0, 0.0, 6.0, 0.0]]]), False),
    ("Geometric", family("Geometric", probs=unit(3)), counts(5, 4, 3), False),
    ("Geometric-logits", family("Geometric", logits=real(3)), counts(5, 4, 3), False),
    ("Cauchy", family("Cauchy", loc=real(3), scale=positive(3)), real(4, 3) * 3, True),
    ("HalfCauchy", family("HalfCauchy", scale=positive(3)), positive(4, 3), True),
    ("HalfNormal", family("HalfNormal", scale=positive(3)), positive(4, 3), True),
    ("Gumbel", family("Gumbel", loc=real(3), scale=positive(3)), real(4, 3), True),
    ("StudentT", family("StudentT", df=np.array([0.7, 1.5, 3.0, 6.0]), loc=real(4), scale=positive(4)),
     real(5, 4), False),
    ("Chi2", family("Chi2", df=positive(3) * 4), positive(4, 3), False),
    ("LowRankMultivariateNormal", family("LowRankMultivariateNormal", loc=real(2, 4), cov_factor=real(2, 4, 2),
                                         cov_diag=positive(4)), real(5, 2, 4), False),
    ("MixtureSameFamily", mixture, real(4, 2), True),
    ("MixtureSameFamily-vector", vector_mixture, real(4, 2), False),
    ("RelaxedOneHotCategorical", family("RelaxedOneHotCategorical", temperature=np.array(0.7),
                                        logits=RELAXED_LOGITS), simplex(3, 2, 4), False),
    ("ExpRelaxedCategorical", exp_relaxed, np.log(simplex(3, 4)), False),
    ("NegativeBinomial", family("NegativeBinomial", total_count=positive(3) * 4, probs=unit(3)), counts(9, 4, 3),
     False),
    ("NegativeBinomial-logits", family("NegativeBinomial", total_count=np.array([0.0, 2.5, 7.0]), logits=real(3)),
     np.array([[0.0, 1.0, 4.0], [0.0, 0.0, 2.0]]), False),
    ("Weibull", family("Weibull", scale=positive(3), concentration=positive(3) * 2), positive(4, 3), True),
    ("Pareto", family("Pareto", scale=positive(3) * 0.5, alpha=np.array([0.8, 1.5, 3.5])), positive(4, 3) + 1.0,
     True),
    ("InverseGamma", family("InverseGamma", concentration=np.array([0.7, 1.5, 3.5]), rate=positive(3)),
     positive(4, 3), False),
    ("Kumaraswamy", family("Kumaraswamy", concentration1=positive(3) * 2, concentration0=np.array([0.7, 1.5, 3.0])),
     unit(4, 3), True),
    ("FisherSnedecor", family("FisherSnedecor", df1=np.array([1.5, 4.0, 9.0]), df2=np.array([1.5, 4.5, 12.0])),
     positive(4, 3), False),
    ("RelaxedBernoulli", family("RelaxedBernoulli", temperature=np.array(0.6), probs=unit(3)), unit(4, 3), False),
    ("LogitRelaxedBernoulli", logit_relaxed, real(4, 3), False),
    ("ContinuousBernoulli", family("ContinuousBernoulli", probs=np.array([0.1, 0.4995, 0.5, 0.7])), unit(3, 4), True),
    ("ContinuousBernoulli-logits", family("ContinuousBernoulli", logits=real(3)), unit(4, 3), True),
    # float32: torch's GeneralizedPareto compares its concentration with a float32 zero
    ("GeneralizedPareto", family("GeneralizedPareto", loc=real(4).astype(np.float32),
                                 scale=positive(4).astype(np.float32),
                                 concentration=np.array([-0.3, 0.0, 0.1, 0.7], dtype=np.float32)), None, True),
    ("Wishart", family("Wishart", df=np.array([3.5, 6.0]), covariance_matrix=positive_definite(2, 3)),
     positive_definite(4, 2, 3), False),
    ("Wishart-scale_tril", family("Wishart", df=np.array(4.0), scale_tril=np.linalg.cholesky(positive_definite(3))),
     positive_definite(2, 3), False),
    ("LKJCholesky", family("LKJCholesky", dim=3, concentration=np.array([0.5, 1.0, 2.5])), corr_cholesky(4, 3, 3),
     False),
    ("VonMises", family("VonMises", loc=real(4), concentration=np.array([1e-6, 0.5, 3.0, 8.0])), real(5, 4), False),
]


def _property_or_error(dist, name, *args):
    def compute():
        value = getattr(dist, name)
        return value(*args) if callable(value) else value
    return outcome(compute)


def _inside_support(values, dist):
    """Given values, or (for a support that depends on the parameters) values inside it."""
    if values is not None:
        return values
    low, high = numpy_of(dist.support.lower_bound), numpy_of(dist.support.upper_bound)
    return low + np.minimum(high - low, 5.0) * unit(4, *low.shape)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case):
    _, make, values, has_cdf = case
    ours, theirs = make(scriptc), make(torch)
    values = _inside_support(values, theirs)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    for name in ("mean", "variance", "stddev", "mode", "entropy"):
        assert_same_outcome(_property_or_error(ours, name), _property_or_error(theirs, name), name)
    assert_close(ours.log_prob(as_backend(scriptc, values)), theirs.log_prob(as_backend(torch, values)),
                 what="log_prob")
    if has_cdf:
        cdf = ours.cdf(as_backend(scriptc, values))
        assert_close(cdf, theirs.cdf(as_backend(torch, values)), what="cdf")
        inverse = _property_or_error(ours, "icdf", cdf)
        assert_same_outcome(inverse, _property_or_error(theirs, "icdf", as_backend(torch, cdf.numpy())), "icdf")
        if not isinstance(inverse, type):
            assert_close(inverse, values, rtol=1e-6, atol=1e-6, what="icdf")
    if ours.has_enumerate_support:
        assert_same_outcome(_property_or_error(ours, "enumerate_support"), _property_or_error(theirs, "enumerate_support"),
                 "enumerate_support")
    assert repr(ours.support) == repr(theirs.support)
    assert {k: repr(v) for k, v in ours.arg_constraints.items()} == {k: repr(v) for k, v in theirs.arg_constraints.items()}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_samples_have_the_shape_support_and_mean_of_torch(case):
    name, make, _, _ = case
    ours, theirs = make(scriptc), make(torch)
    scriptc.manual_seed(0)
    samples = ours.sample((4000,))
    assert tuple(samples.shape) == tuple(theirs.sample((4000,)).shape)
    assert samples.dtype.name == str(theirs.sample().dtype).removeprefix("torch.")
    assert not samples.requires_grad
    assert bool(ours.support.check(samples).all())
    mean, std = _property_or_error(theirs, "mean"), _property_or_error(theirs, "stddev")
    if isinstance(mean, type) or name == "VonMises":  # VonMises: circular moments, tested below
        return
    mean, std = numpy_of(mean), numpy_of(std)
    finite = np.isfinite(mean) & np.isfinite(std)
    if finite.any():
        sample_mean = samples.numpy().mean(0)
        np.testing.assert_allclose(sample_mean[finite], mean[finite], atol=float(5 * std[finite].max() / np.sqrt(4000)))
        sample_std = samples.numpy().std(0)
        np.testing.assert_allclose(sample_std[finite], std[finite], rtol=0.15)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_expand_broadcasts_the_parameters(case):
    name, make, values, _ = case
    ours, theirs = make(scriptc), make(torch)
    values = _inside_support(values, theirs)
    shape = (2,) + tuple(theirs.batch_shape)
    big, big_t = ours.expand(shape), theirs.expand(shape)
    assert type(big) is type(ours) and tuple(big.batch_shape) == tuple(big_t.batch_shape)
    assert_close(big.log_prob(as_backend(scriptc, values[:1])), big_t.log_prob(as_backend(torch, values[:1])),
                 what="log_prob")
    assert tuple(big.sample((3,)).shape) == tuple(big_t.sample((3,)).shape)


def test_von_mises_samples_have_its_circular_mean_and_resultant_length():
    loc, concentration = np.array([-2.5, 0.0, 3.0, 1.0]), np.array([1e-6, 0.5, 3.0, 8.0])
    ours = scriptc.distributions.VonMises(*as_backend(scriptc, (loc, concentration)))
    theirs = torch.distributions.VonMises(*as_backend(torch, (loc, concentration)))
    scriptc.manual_seed(0)
    samples = ours.sample((4000,)).numpy()
    assert samples.min() >= -np.pi and samples.max() < np.pi
    resultant = np.exp(1j * samples).mean(0)
    # mean resultant length I1(k) / I0(k) = 1 - circular variance
    np.testing.assert_allclose(np.abs(resultant), 1 - theirs.variance.numpy(), atol=0.04)
    concentrated = concentration > 0.1
    np.testing.assert_allclose(np.angle(resultant)[concentrated], loc[concentrated], atol=0.15)
