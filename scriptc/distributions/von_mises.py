"""VonMises (torch.distributions.VonMises)."""

from __future__ import annotations

import math

import scriptc

from . import constraints
from .centered import CenteredAtLoc
from .distribution import Distribution, as_size
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# polynomial approximations of I0 and I1 (Abramowitz & Stegun 9.8.1-9.8.4), below and above x = 3.75
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_COEF_LARGE = [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537,
                  -0.01647633, 0.00392377]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411]
_I1_COEF_LARGE = [0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312,
                  0.01787654, -0.00420059]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order: int = 0):
    """log I_order(x) for x > 0, order 0 or 1, as torch approximates it."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    small = _eval_poly((x / 3.75) ** 2, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    # the large-x series evaluated only where it is used (its polynomial goes negative below 3.75)
    x_large = x.clamp(min=3.75)
    large = x_large - 0.5 * x_large.log() + _eval_poly(3.75 / x_large, _COEF_LARGE[order]).log()
    return scriptc.where(x < 3.75, small.log(), large)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best & Fisher's (1979) wrapped-Cauchy rejection sampler, every element redrawn until accepted."""
    done = scriptc.zeros(tuple(x.shape), dtype=scriptc.bool)
    while not bool(done.all()):
        u1, u2, u3 = scriptc.rand((3,) + tuple(x.shape), dtype=loc.dtype).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | (((c / u2).log() + 1 - c) >= 0)
        if bool(accept.any()):
            x = scriptc.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(CenteredAtLoc, Distribution):
    """The von Mises (circular normal) distribution on angles, mean direction `loc`, concentration
    `concentration`; samples lie in [-pi, pi) and are drawn in float64 by rejection."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self):
        return self.loc.to(scriptc.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(scriptc.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho ** 2) / (2 * rho)
        # rho loses all precision for tiny kappa; the series 1 / kappa + kappa does not
        return scriptc.where(kappa < 1e-5, 1 / kappa + kappa, proposal_r)

    def sample(self, sample_shape=()):
        with scriptc.no_grad():
            x = scriptc.empty(tuple(self._extended_shape(sample_shape)), dtype=self._loc.dtype)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return type(self)(self.loc.expand(batch_shape), self.concentration.expand(batch_shape),
                          validate_args=self.__dict__.get("_validate_args"))

    @lazy_property
    def variance(self):
        # circular variance 1 - I1(kappa) / I0(kappa)
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
