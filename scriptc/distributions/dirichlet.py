"""Dirichlet (torch.distributions.Dirichlet)."""

from __future__ import annotations

import scriptc

from . import constraints
from .distribution import as_size
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, `concentration` over the last dim. rsample
    normalizes independent Gamma(concentration_i, 1) samples, so its gradient is the Gamma
    samples' implicit reparameterization through the normalization (torch differentiates its
    Dirichlet sample directly; both are unbiased pathwise gradients, per sample they differ)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(Dirichlet, batch_shape, _instance,
                              concentration=self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape)))

    def rsample(self, sample_shape=()):
        gammas = scriptc._standard_gamma(self.concentration.expand(tuple(self._extended_shape(sample_shape))))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (scriptc.xlogy(self.concentration - 1.0, value).sum(-1) + self.concentration.sum(-1).lgamma()
                - self.concentration.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        largest = (mode.argmax(dim=-1, keepdim=True) == scriptc.arange(shifted.shape[-1])).to(mode.dtype)
        return scriptc.where(all_below_one, largest, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        total = self.concentration.sum(-1)
        return (self.concentration.lgamma().sum(-1) - total.lgamma() - (k - total) * total.digamma()
                - ((self.concentration - 1.0) * self.concentration.digamma()).sum(-1))
