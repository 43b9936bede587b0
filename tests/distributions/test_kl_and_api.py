"""kl_divergence for every registered pair, argument validation, transforms, Independent and the Distribution API."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc
from scriptc import distributions as D
from tests.distributions.pairs import Draw, as_backend, assert_close, assert_raises_as_torch, build

torch = pytest.importorskip("torch")

draw = Draw(1)
pos, real, unit, simplex, tril = draw.positive, draw.real, draw.unit, draw.simplex, draw.lower_cholesky


PARAMS = {
    "Normal": lambda: dict(loc=real(3), scale=pos(3)),
    "Uniform": lambda: dict(low=real(3) - 2.0, high=real(3) + 2.0),
    "Bernoulli": lambda: dict(probs=unit(3)),
    "Categorical": lambda: dict(probs=simplex(3, 4)),
    "OneHotCategorical": lambda: dict(logits=real(3, 4)),
    "Exponential": lambda: dict(rate=pos(3)),
    "Laplace": lambda: dict(loc=real(3), scale=pos(3)),
    "Gamma": lambda: dict(concentration=pos(3), rate=pos(3)),
    "Beta": lambda: dict(concentration1=pos(3), concentration0=pos(3)),
    "Dirichlet": lambda: dict(concentration=pos(3, 4)),
    "MultivariateNormal": lambda: dict(loc=real(3, 2), scale_tril=tril(3, 2)),
    "LogNormal": lambda: dict(loc=real(3), scale=pos(3)),
}
# Uniform on [0, 1] so that the pairs with a bounded q have finite values
UNIT_UNIFORM = dict(low=np.zeros(3), high=np.ones(3))
PAIRS = [("Normal", "Normal"), ("Uniform", "Uniform"), ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"),
         ("OneHotCategorical", "OneHotCategorical"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
         ("Gamma", "Gamma"), ("Beta", "Beta"), ("Dirichlet", "Dirichlet"),
         ("MultivariateNormal", "MultivariateNormal"), ("LogNormal", "LogNormal"), ("Beta", "Exponential"),
         ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"), ("Exponential", "Gamma"),
         ("Exponential", "Normal"), ("Gamma", "Exponential"), ("Gamma", "Normal"), ("Laplace", "Normal"),
         ("Normal", "Laplace"), ("Uniform", "Beta"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
         ("Uniform", "Normal"), ("Exponential", "Uniform"), ("Gamma", "Beta"), ("Laplace", "Exponential"),
         ("Normal", "Gamma"), ("Normal", "Uniform")]


@pytest.mark.parametrize("p_name,q_name", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_divergence_matches_torch(p_name, q_name):
    p_params = UNIT_UNIFORM if p_name == "Uniform" and q_name == "Beta" else PARAMS[p_name]()
    q_params = UNIT_UNIFORM if q_name == "Uniform" and p_name == "Beta" else PARAMS[q_name]()
    ours = D.kl_divergence(build(scriptc, p_name, p_params), build(scriptc, q_name, q_params))
    theirs = torch.distributions.kl_divergence(build(torch, p_name, p_params), build(torch, q_name, q_params))
    assert_close(ours, theirs, rtol=1e-6, what=f"KL({p_name} || {q_name})")


def test_kl_of_independent_and_infinite_support_mismatch():
    loc, scale = real(2, 3), pos(2, 3)
    p = D.Independent(D.Normal(*as_backend(scriptc, (loc, scale))), 1)
    q = D.Independent(D.Normal(*as_backend(scriptc, (loc + 1, scale))), 1)
    p_t = torch.distributions.Independent(torch.distributions.Normal(*as_backend(torch, (loc, scale))), 1)
    q_t = torch.distributions.Independent(torch.distributions.Normal(*as_backend(torch, (loc + 1, scale))), 1)
    assert_close(D.kl_divergence(p, q), torch.distributions.kl_divergence(p_t, q_t), what="independent")
    narrow = D.Uniform(scriptc.tensor([0.0]), scriptc.tensor([1.0]))
    wide = D.Uniform(scriptc.tensor([-1.0]), scriptc.tensor([2.0]))
    assert D.kl_divergence(wide, narrow).tolist() == [math.inf]


def test_kl_registry_dispatch_errors_and_override():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q "
                                                  "type Categorical"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(probs=scriptc.tensor([0.5, 0.5])))

    class Shifted(D.Normal):
        pass

    @D.register_kl(Shifted, D.Normal)
    def _kl_shifted(p, q):
        return scriptc.tensor(42.0)

    assert D.kl_divergence(Shifted(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), Shifted(0.0, 1.0)).item() == 0.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


INVALID = [
    ("Normal", dict(loc=np.zeros(2), scale=np.array([1.0, -1.0]))),
    ("Normal", dict(loc=np.array(0.0), scale=np.array(0.0))),
    ("Bernoulli", dict(probs=np.array([0.5, 1.5]))),
    ("Categorical", dict(probs=np.array([-0.1, 1.1]))),
    ("Exponential", dict(rate=np.array([0.0]))),
    ("Uniform", dict(low=np.array([1.0]), high=np.array([0.0]))),
    ("Gamma", dict(concentration=np.array([1.0]), rate=np.array([-2.0]))),
    ("Dirichlet", dict(concentration=np.array([1.0, 0.0]))),
]


@pytest.mark.parametrize("name,params", INVALID, ids=[n for n, _ in INVALID])
def test_invalid_parameters_raise_torch_message(name, params):
    assert_raises_as_torch(torch, lambda m: build(m, name, params))
    build(scriptc, name, params, validate_args=False)


SAMPLE_ERRORS = [
    ("Normal", dict(loc=np.zeros(3), scale=np.ones(3)), np.zeros((2, 4))),
    ("Categorical", dict(probs=np.full((2, 3), 1 / 3)), np.array([0.0, 3.0])),
    ("Bernoulli", dict(probs=np.full(2, 0.5)), np.array([0.5, 1.0])),
    ("Exponential", dict(rate=np.ones(2)), np.array([-1.0, 1.0])),
    ("Dirichlet", dict(concentration=np.ones(3)), np.array([0.5, 0.5])),
]


@pytest.mark.parametrize("name,params,value", SAMPLE_ERRORS, ids=[n for n, _, _ in SAMPLE_ERRORS])
def test_invalid_values_raise_torch_message(name, params, value):
    assert_raises_as_torch(torch, lambda m: build(m, name, params).log_prob(as_backend(m, value)))


def test_log_prob_value_must_be_a_tensor_and_default_validation_switch():
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_categorical_argument_errors_and_lazy_parameters():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Categorical()
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        D.Categorical(probs=scriptc.tensor(1.0))
    dist = D.Categorical(logits=scriptc.tensor([0.0, 1.0, 2.0]))
    assert "probs" not in dist.__dict__
    np.testing.assert_allclose(dist.probs.numpy(), np.exp([0, 1, 2]) / np.exp([0, 1, 2]).sum(), rtol=1e-6)
    assert "probs" in dist.__dict__
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


@pytest.mark.parametrize("reinterpreted", [0, 1, 2])
def test_independent_matches_torch(reinterpreted):
    loc, scale = real(2, 3, 4), pos(2, 3, 4)
    ours = D.Independent(D.Normal(*as_backend(scriptc, (loc, scale))), reinterpreted)
    theirs = torch.distributions.Independent(torch.distributions.Normal(*as_backend(torch, (loc, scale))),
                                             reinterpreted)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    value = real(5, 2, 3, 4)
    assert_close(ours.log_prob(as_backend(scriptc, value)), theirs.log_prob(as_backend(torch, value)))
    assert_close(ours.entropy(), theirs.entropy())
    assert repr(ours.support) == repr(theirs.support)
    assert tuple(ours.expand((7,) + tuple(ours.batch_shape)).batch_shape) == (7,) + tuple(theirs.batch_shape)
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= len"):
        D.Independent(D.Normal(scriptc.zeros(2), scriptc.ones(2)), 2)


TRANSFORMS = [
    ("ExpTransform", (), real(4)),
    ("AffineTransform", (2.0, -3.0), real(4)),
    ("SigmoidTransform", (), real(4)),
    ("TanhTransform", (), real(4) * 0.5),
    ("PowerTransform", (np.array(2.5),), pos(4)),
]


@pytest.mark.parametrize("name,args,x", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms_match_torch(name, args, x):
    ours = getattr(D.transforms, name)(*as_backend(scriptc, args))
    theirs = getattr(torch.distributions.transforms, name)(*as_backend(torch, args))
    y, y_t = ours(as_backend(scriptc, x)), theirs(as_backend(torch, x))
    assert_close(y, y_t)
    assert_close(ours.inv(y), x, rtol=1e-6)
    assert_close(ours.log_abs_det_jacobian(as_backend(scriptc, x), y),
                 theirs.log_abs_det_jacobian(as_backend(torch, x), y_t))
    assert repr(ours.codomain) == repr(theirs.codomain)


def test_transformed_distribution_of_a_composition_matches_torch():
    loc, scale = real(3), pos(3)

    def make(module):
        t = module.distributions.transforms
        base = module.distributions.Normal(*as_backend(module, (loc, scale)))
        return module.distributions.TransformedDistribution(
            base, [t.AffineTransform(1.0, 2.0), t.SigmoidTransform()])

    ours, theirs = make(scriptc), make(torch)
    value = np.array([0.2, 0.5, 0.9])
    assert_close(ours.log_prob(as_backend(scriptc, value)), theirs.log_prob(as_backend(torch, value)))
    assert_close(ours.cdf(as_backend(scriptc, value)), theirs.cdf(as_backend(torch, value)))
    assert bool(ours.support.check(ours.sample((10,))).all())
    assert tuple(ours.rsample((4,)).shape) == (4, 3)


CONSTRAINTS = [
    ("real", np.array([0.0, np.nan, np.inf])), ("positive", np.array([-1.0, 0.0, 2.0])),
    ("nonnegative", np.array([-1.0, 0.0, 2.0])), ("unit_interval", np.array([-0.1, 0.0, 0.5, 1.0, 1.1])),
    ("boolean", np.array([0.0, 1.0, 0.5])), ("nonnegative_integer", np.array([-1.0, 0.0, 2.0, 2.5])),
    ("simplex", np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])),
    ("one_hot", np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])),
    ("real_vector", np.array([[0.0, 1.0], [np.nan, 0.0]])),
    ("lower_cholesky", np.array([[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])),
    ("lower_triangular", np.array([[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]])),
    ("symmetric", np.array([[[1.0, 2.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]])),
    ("positive_definite", np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]])),
    ("positive_semidefinite", np.array([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])),
    ("square", np.zeros((2, 3, 3))),
]


@pytest.mark.parametrize("name,value", CONSTRAINTS, ids=[n for n, _ in CONSTRAINTS])
def test_constraints_check_and_print_as_torch(name, value):
    ours, theirs = getattr(D.constraints, name), getattr(torch.distributions.constraints, name)
    assert repr(ours) == repr(theirs)
    assert (ours.event_dim, ours.is_discrete) == (theirs.event_dim, theirs.is_discrete)
    np.testing.assert_array_equal(ours.check(scriptc.from_numpy(value)).numpy(),
                                  theirs.check(torch.from_numpy(value)).numpy())


def test_parametrized_constraints():
    for make in (lambda c: c.interval(-1.0, 2.0), lambda c: c.greater_than(1.0), lambda c: c.less_than(0.0),
                 lambda c: c.integer_interval(0, 3), lambda c: c.half_open_interval(0.0, 1.0),
                 lambda c: c.independent(c.positive, 1), lambda c: c.greater_than_eq(2.0)):
        ours, theirs = make(D.constraints), make(torch.distributions.constraints)
        assert repr(ours) == repr(theirs)
        value = np.array([[-1.0, 0.0], [1.0, 2.0]])
        np.testing.assert_array_equal(ours.check(scriptc.from_numpy(value)).numpy(),
                                      theirs.check(torch.from_numpy(value)).numpy())
    assert D.constraints.is_dependent(D.Uniform(0.0, 1.0).arg_constraints["low"]) is False
    assert D.constraints.is_dependent(D.constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        D.constraints.dependent.check(scriptc.zeros(1))
