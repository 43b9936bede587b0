"""GeneralizedPareto (torch.distributions.GeneralizedPareto)."""

from __future__ import annotations

import math

import scriptc

from . import constraints
from .distribution import Distribution

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of threshold excesses, with `loc`, `scale` and shape
    `concentration` (0: exponential tail; > 0: heavy tail; < 0: bounded above by
    loc - scale / concentration)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None) -> None:
        super().__init__(self._broadcast_params(loc=loc, scale=scale, concentration=concentration),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, "loc", "scale", "concentration")

    def _safe_concentration(self):
        """(concentration == 0 within isclose, concentration with those entries replaced by 1)."""
        eq_zero = scriptc.isclose(self.concentration, scriptc.zeros_like(self.concentration))
        return eq_zero, scriptc.where(eq_zero, scriptc.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()):
        return self.icdf(scriptc.rand(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + scriptc.ones_like(z)
        where_nonzero = scriptc.where(y == 0, y, y * (safe_conc * z).log1p())
        return -self.scale.log() - scriptc.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """log(1 - cdf(value))."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        return scriptc.where(eq_zero, -z, -(safe_conc * z).log1p() / safe_conc)

    def log_cdf(self, value):
        """log(cdf(value))."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = (-value).log1p()
        where_nonzero = self.loc + self.scale / safe_conc * (-safe_conc * logu).expm1()
        return scriptc.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1  # the mean is infinite from concentration 1 on (nan, as torch)
        safe_conc = scriptc.where(valid, self.concentration, 0.5)
        return scriptc.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = scriptc.where(valid, self.concentration, 0.25)
        return scriptc.where(valid, self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), math.nan)

    def entropy(self):
        return scriptc.broadcast_to(self.scale.log() + self.concentration + 1, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = scriptc.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
