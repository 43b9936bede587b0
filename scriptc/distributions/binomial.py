"""Binomial (torch.distributions.Binomial) and Multinomial (torch.distributions.Multinomial)."""

from __future__ import annotations

import math

import scriptc
from scriptc.tensors import Size

from . import constraints
from .probs_logits import BinaryProbsOrLogits, CategoricalParameters
from .categorical import Categorical
from .distribution import Distribution, as_size
from .utils import broadcast_all

__all__ = ["Binomial", "Multinomial"]


def _clamp_by_zero(x):
    """max(x, 0) written so that its gradient at 0 is 1/2."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryProbsOrLogits, Distribution):
    """The number of successes in `total_count` independent trials, each a success with
    probability `probs` (or sigmoid(`logits`)), exactly one of the two given."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args: bool | None = None) -> None:
        (total_count,) = self._store_probs_or_logits(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_or_logits(Binomial, batch_shape, _instance,
                                            total_count=self.total_count.expand(tuple(batch_shape)))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with scriptc.no_grad():
            return scriptc.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = (self.total_count + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (self.total_count - value + 1).lgamma()
        # n * log(1 + exp(logits)) kept finite for large |logits|
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p() - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_total_count(self, what: str) -> int:
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_total_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total_count = self._homogeneous_total_count("enumerate_support")
        values = scriptc.arange(1 + total_count, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Multinomial(CategoricalParameters, Distribution):
    """Counts of each of K categories over `total_count` draws from Categorical(probs/logits);
    log_prob accepts any total (torch does not check that a value sums to `total_count`)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(Multinomial, batch_shape, _instance, total_count=self.total_count,
                              _categorical=self._categorical.expand(batch_shape),
                              _binomial=self._binomial.expand(tuple(batch_shape) + tuple(self._event_shape)))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)


    def sample(self, sample_shape=()):
        sample_shape = as_size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
        samples = samples.permute(*range(1, samples.dim()), 0)
        counts = samples.new_zeros(tuple(self._extended_shape(sample_shape)))
        counts.scatter_add_(-1, samples, scriptc.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = float(self.total_count)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        return (n * self._categorical.entropy() - math.lgamma(n + 1)
                + (binomial_probs * (support + 1).lgamma()).sum([0, -1]))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        # 0 * log(0) counts as 0: a category of probability 0 that was never drawn
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
