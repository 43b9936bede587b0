"""Exponential (torch.distributions.Exponential)."""

from __future__ import annotations


import scriptc

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        super().__init__(self._broadcast_params(rate=rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return scriptc.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        return self.rate.new_empty(tuple(self._extended_shape(sample_shape))).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()
