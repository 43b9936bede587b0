"""Beta (torch.distributions.Beta): a two-component Dirichlet."""

from __future__ import annotations

from numbers import Number

import scriptc

from . import constraints
from .dirichlet import Dirichlet
from .distribution import as_size
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] with `concentration1` (alpha) and `concentration0` (beta);
    samples and densities come from Dirichlet([alpha, beta])."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = scriptc.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = scriptc.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(Beta, batch_shape, _instance, _dirichlet=self._dirichlet.expand(batch_shape))

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(scriptc.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
