"""Categorical (torch.distributions.Categorical)."""

from __future__ import annotations

import math

import scriptc
from scriptc.tensors import Size
from scriptc.types import int64

from . import constraints
from .distribution import Distribution, as_size
from .utils import finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """A distribution over {0, ..., K-1} given by `probs` (normalized over the last dim) or by
    `logits` (unnormalized log-probabilities), exactly one of them; the other is derived on demand."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        params = {name: self.__dict__[name].expand(param_shape) for name in ("probs", "logits") if name in self.__dict__}
        new = self._expanded(Categorical, batch_shape, _instance, _num_events=self._num_events, **params)
        new._param = params.get("logits", params.get("probs"))
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self):
        return scriptc.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return scriptc.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = as_size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = scriptc.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, log_pmf = scriptc.broadcast_tensors(value.long().unsqueeze(-1), self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=float(finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = scriptc.arange(self._num_events, dtype=int64).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
