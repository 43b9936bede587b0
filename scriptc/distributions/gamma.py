"""Gamma (torch.distributions.Gamma)."""

from __future__ import annotations


import scriptc

from . import constraints
from .exp_family import ExponentialFamily
from .utils import finfo

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution with shape `concentration` and `rate` (density proportional to
    x^(concentration - 1) exp(-rate x)). rsample is reparameterized implicitly: the standard gamma
    sample's gradient w.r.t. its concentration is -(dF/dalpha) / f at the sample, F the CDF and f
    the density (torch's `_standard_gamma` formula)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        super().__init__(self._broadcast_params(concentration=concentration, rate=rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = scriptc._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=float(finfo(value.dtype).tiny))  # a sample of 0 would give log_prob -inf
        return value

    def log_prob(self, value):
        value = scriptc.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (scriptc.xlogy(self.concentration, self.rate) + scriptc.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def entropy(self):
        return (self.concentration - self.rate.log() + self.concentration.lgamma()
                + (1.0 - self.concentration) * self.concentration.digamma())
