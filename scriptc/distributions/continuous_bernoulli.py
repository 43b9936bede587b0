"""ContinuousBernoulli (torch.distributions.ContinuousBernoulli)."""

from __future__ import annotations

import math

import scriptc
from scriptc.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .probs_logits import BinaryProbsOrLogits
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryProbsOrLogits, ExponentialFamily):
    """A density on [0, 1] proportional to probs^x (1 - probs)^(1 - x) (Loaiza-Ganem & Cunningham,
    2019). Near probs = 1/2 (inside `lims`) the normalizer, moments and CDF use Taylor expansions,
    where the closed forms lose precision."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args: bool | None = None) -> None:
        self._store_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_or_logits(ContinuousBernoulli, batch_shape, _instance, _lims=self._lims)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return scriptc.where(self._outside_unstable_region(), self.probs, self._lims[0] * scriptc.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log of the normalizing constant C(probs)."""
        cut_probs = self._cut_probs()
        below_half = scriptc.where(cut_probs <= 0.5, cut_probs, scriptc.zeros_like(cut_probs))
        above_half = scriptc.where(cut_probs >= 0.5, cut_probs, scriptc.ones_like(cut_probs))
        log_norm = ((-cut_probs).log1p() - cut_probs.log()).abs().log() - scriptc.where(
            cut_probs <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return scriptc.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / ((-cut_probs).log1p() - cut_probs.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return scriptc.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2)
                     + 1.0 / ((-cut_probs).log1p() - cut_probs.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return scriptc.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=()):
        u = scriptc.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype)
        with scriptc.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        return self.icdf(scriptc.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded = scriptc.where(self._outside_unstable_region(), cdfs, value)
        return scriptc.where(value <= 0.0, scriptc.zeros_like(value),
                             scriptc.where(value >= 1.0, scriptc.ones_like(value), unbounded))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        inverse = (((-cut_probs + value * (2.0 * cut_probs - 1.0)).log1p() - (-cut_probs).log1p())
                   / (cut_probs.log() - (-cut_probs).log1p()))
        return scriptc.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0
