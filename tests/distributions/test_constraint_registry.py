"""biject_to / transform_to against torch 2.13: the transform chosen for each constraint, its values
on unconstrained inputs (which land inside the constraint), and the registry's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import distributions as D
from tests.distributions.pairs import as_backend, assert_close

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)

# a constraint maker (given the constraints module), and an unconstrained input for its transform
CONSTRAINTS = [
    ("real", lambda c: c.real, (3,)),
    ("positive", lambda c: c.positive, (3,)),
    ("nonnegative", lambda c: c.nonnegative, (3,)),
    ("greater_than", lambda c: c.greater_than(1.5), (3,)),
    ("greater_than_eq", lambda c: c.greater_than_eq(-2.0), (3,)),
    ("less_than", lambda c: c.less_than(0.5), (3,)),
    ("unit_interval", lambda c: c.unit_interval, (3,)),
    ("interval", lambda c: c.interval(-1.0, 3.0), (3,)),
    ("half_open_interval", lambda c: c.half_open_interval(0.0, 2.0), (3,)),
    ("simplex", lambda c: c.simplex, (2, 3)),
    ("independent", lambda c: c.independent(c.positive, 1), (2, 3)),
    ("lower_cholesky", lambda c: c.lower_cholesky, (2, 3, 3)),
    ("positive_definite", lambda c: c.positive_definite, (2, 3, 3)),
    ("corr_cholesky", lambda c: c.corr_cholesky, (2, 3)),
    ("cat", lambda c: c.cat([c.positive, c.real], dim=-1, lengths=[2, 1]), (2, 3)),
    ("stack", lambda c: c.stack([c.positive, c.unit_interval], dim=-1), (3, 2)),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,make,shape", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_registry_matches_torch(registry, name, make, shape):
    ours_constraint, theirs_constraint = make(D.constraints), make(torch.distributions.constraints)
    try:
        theirs = getattr(torch.distributions, registry)(theirs_constraint)
    except NotImplementedError as error:
        with pytest.raises(NotImplementedError, match=str(error)):
            getattr(D, registry)(ours_constraint)
        return
    ours = getattr(D, registry)(ours_constraint)
    assert repr(ours).replace("scriptc.", "torch.") == repr(theirs)
    x = rng.standard_normal(shape)
    y = ours(as_backend(scriptc, x))
    assert_close(y, theirs(as_backend(torch, x)), what=f"{registry}({name})")
    assert bool(ours_constraint.check(y).all())


def test_register_a_new_constraint_and_errors():
    class Odd(D.constraints.Constraint):
        def check(self, value):
            return value % 2 == 1

    registry = D.constraint_registry.ConstraintRegistry()
    with pytest.raises(NotImplementedError, match="Cannot transform Odd constraints"):
        registry(Odd())
    registry.register(Odd, lambda constraint: D.transforms.AffineTransform(1.0, 2.0))
    assert registry(Odd())(scriptc.tensor([3.0])).tolist() == [7.0]
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        registry.register(int, lambda constraint: None)
