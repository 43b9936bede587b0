"""Geometric (torch.distributions.Geometric)."""

from __future__ import annotations

from numbers import Number

from scriptc.autograd import no_grad
from scriptc.nn.functional import binary_cross_entropy_with_logits
from scriptc.tensors import Size

from . import constraints
from .distribution import Distribution, as_size
from .utils import broadcast_all, finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success in trials that succeed with probability
    `probs` (or sigmoid(`logits`)), exactly one given; probs must be positive."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        super().__init__(Size() if isinstance(given, Number) else given.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        params = {name: self.__dict__[name].expand(batch_shape) for name in ("probs", "logits") if name in self.__dict__}
        return self._expanded(Geometric, batch_shape, _instance, **params)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return self.probs.new_zeros(tuple(self.probs.shape))

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=()):
        tiny = float(finfo(self.probs.dtype).tiny)
        with no_grad():
            u = self.probs.new_empty(tuple(self._extended_shape(sample_shape))).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # certain success (probs 1) at value 0 has probability 1, not 0 * log(0)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
