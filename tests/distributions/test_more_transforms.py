"""The structural, simplex, Cholesky and CDF transforms against torch 2.13: forward, inverse,
log |det J|, domain/codomain, shapes, errors; and the distributions built on them."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc.distributions import transforms as T
from tests.distributions.pairs import Draw, as_backend, assert_close, assert_same_outcome, outcome

torch = pytest.importorskip("torch")

draw = Draw(4)
real, simplex, positive_definite = draw.real, draw.simplex, draw.positive_definite
lower_cholesky, corr_cholesky = draw.lower_cholesky, draw.corr_cholesky


# name, maker (given the backend's transforms module and the backend), x, y to invert, whether y = T(x) exactly
CASES = [
    ("SoftplusTransform", lambda t, m: t.SoftplusTransform(), real(3, 4), None),
    ("SoftmaxTransform", lambda t, m: t.SoftmaxTransform(), real(3, 4), simplex(3, 4)),
    ("StickBreakingTransform", lambda t, m: t.StickBreakingTransform(), real(3, 4), simplex(3, 5)),
    ("LowerCholeskyTransform", lambda t, m: t.LowerCholeskyTransform(), real(2, 3, 3), lower_cholesky(2, 3)),
    ("PositiveDefiniteTransform", lambda t, m: t.PositiveDefiniteTransform(), real(2, 3, 3),
     positive_definite(2, 3)),
    ("CorrCholeskyTransform", lambda t, m: t.CorrCholeskyTransform(), real(2, 6), corr_cholesky(2, 4)),
    ("ReshapeTransform", lambda t, m: t.ReshapeTransform((2, 3), (3, 2)), real(4, 2, 3), real(4, 3, 2)),
    ("IndependentTransform", lambda t, m: t.IndependentTransform(t.ExpTransform(), 1), real(3, 4), None),
    ("CatTransform", lambda t, m: t.CatTransform([t.ExpTransform(), t.AffineTransform(1.0, 2.0)], dim=-1,
                                                 lengths=[2, 3]), real(3, 5), None),
    ("CatTransform-event", lambda t, m: t.CatTransform([t.IndependentTransform(t.ExpTransform(), 1),
                                                        t.SoftplusTransform()], dim=0, lengths=[1, 2]),
     real(3, 4), None),
    ("StackTransform", lambda t, m: t.StackTransform([t.ExpTransform(), t.SigmoidTransform()], dim=1),
     real(3, 2), None),
    ("CumulativeDistributionTransform",
     lambda t, m: t.CumulativeDistributionTransform(m.distributions.Normal(*as_backend(m, (LOC, SCALE)))),
     real(4, 3), None),
]
LOC, SCALE = real(3), np.abs(real(3)) + 0.5


def _transform(case, module):
    return case[1](module.distributions.transforms, module)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transform_matches_torch(case):
    _, _, x, y_given = case
    ours, theirs = _transform(case, scriptc), _transform(case, torch)
    y, y_t = ours(as_backend(scriptc, x)), theirs(as_backend(torch, x))
    assert_close(y, y_t, what="forward")
    if ours.bijective:
        assert_close(ours.inv(y), x, rtol=1e-6, atol=1e-8, what="inverse of forward")
    assert_same_outcome(outcome(lambda: ours.log_abs_det_jacobian(as_backend(scriptc, x), y)),
                        outcome(lambda: theirs.log_abs_det_jacobian(as_backend(torch, x), y_t)), "log_abs_det_jacobian")
    if y_given is not None:
        assert_close(ours.inv(as_backend(scriptc, y_given)), theirs.inv(as_backend(torch, y_given)), what="inverse")
    assert ours.bijective == theirs.bijective
    assert repr(ours.domain) == repr(theirs.domain) and repr(ours.codomain) == repr(theirs.codomain)
    assert (ours.domain.event_dim, ours.codomain.event_dim) == (theirs.domain.event_dim, theirs.codomain.event_dim)
    assert tuple(ours.forward_shape(x.shape)) == tuple(theirs.forward_shape(torch.Size(x.shape)))
    assert tuple(ours.inverse_shape(y_t.shape)) == tuple(theirs.inverse_shape(y_t.shape))
    assert_same_outcome(outcome(lambda: ours.codomain.check(y)), outcome(lambda: theirs.codomain.check(y_t)), "check")
    assert ours == ours.with_cache(0) and ours.with_cache(1)(as_backend(scriptc, x)) is not None


SHAPE_ERRORS = [
    (lambda t: t.ReshapeTransform((2, 3), (3, 2)).forward_shape((4, 3, 2)), ValueError),
    (lambda t: t.ReshapeTransform((2, 3), (5,)), ValueError),
    (lambda t: t.StickBreakingTransform().forward_shape(()), ValueError),
    (lambda t: t.CorrCholeskyTransform().forward_shape((5,)), ValueError),
    (lambda t: t.CorrCholeskyTransform().inverse_shape((3, 4)), ValueError),
    (lambda t: t.CatTransform([t.ExpTransform()], lengths=[1, 2]), AssertionError),
    (lambda t: t.StackTransform([t.ExpTransform(), 3]), AssertionError),
]


@pytest.mark.parametrize("index", range(len(SHAPE_ERRORS)))
def test_shape_and_argument_errors_as_torch(index):
    make, error = SHAPE_ERRORS[index]
    with pytest.raises(error) as theirs:
        make(torch.distributions.transforms)
    with pytest.raises(error) as ours:
        make(T)
    assert str(ours.value).replace("scriptc.", "torch.") == str(theirs.value)


def test_cat_and_stack_check_the_sizes_along_their_dim():
    cat = T.CatTransform([T.ExpTransform(), T.ExpTransform()], dim=0)
    with pytest.raises(AssertionError, match=r"x.size\(0\) = 3 must equal length 2"):
        cat(scriptc.zeros(3))
    stack = T.StackTransform([T.ExpTransform()], dim=1)
    with pytest.raises(AssertionError, match="dim 1 out of range for tensor with 1 dimensions"):
        stack(scriptc.zeros(3))


def test_logistic_normal_matches_torch():
    loc, scale = real(2, 3), np.abs(real(2, 3)) + 0.5
    ours = scriptc.distributions.LogisticNormal(*as_backend(scriptc, (loc, scale)))
    theirs = torch.distributions.LogisticNormal(*as_backend(torch, (loc, scale)))
    assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    value = simplex(5, 2, 4)
    assert_close(ours.log_prob(as_backend(scriptc, value)), theirs.log_prob(as_backend(torch, value)))
    samples = ours.rsample((3,))
    assert tuple(samples.shape) == (3, 2, 4) and bool(ours.support.check(samples).all())
    assert repr(ours.support) == repr(theirs.support)
    scalar = scriptc.distributions.LogisticNormal(0.0, 1.0)
    assert tuple(scalar.event_shape) == tuple(torch.distributions.LogisticNormal(0.0, 1.0).event_shape) == (2,)
    big = ours.expand((4, 2))
    assert tuple(big.sample().shape) == (4, 2, 4)


def test_transformed_distribution_through_the_new_transforms_matches_torch():
    def make(m):
        t = m.distributions.transforms
        base = m.distributions.Normal(*as_backend(m, (np.zeros((2, 6)), np.ones((2, 6)))))
        return m.distributions.TransformedDistribution(
            base, [t.ReshapeTransform((6,), (2, 3)), t.IndependentTransform(t.SoftplusTransform(), 1)])

    ours, theirs = make(scriptc), make(torch)
    assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    value = np.abs(real(4, 2, 2, 3)) + 0.1
    assert_close(ours.log_prob(as_backend(scriptc, value)), theirs.log_prob(as_backend(torch, value)))
