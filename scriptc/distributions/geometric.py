"""Geometric (torch.distributions.Geometric)."""

from __future__ import annotations


from scriptc.autograd import no_grad
from scriptc.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .probs_logits import BinaryProbsOrLogits
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["Geometric"]


class Geometric(BinaryProbsOrLogits, Distribution):
    """The number of failures before the first success in trials that succeed with probability
    `probs` (or sigmoid(`logits`)), exactly one given; probs must be positive."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._store_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_or_logits(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return self.probs.new_zeros(tuple(self.probs.shape))

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

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
