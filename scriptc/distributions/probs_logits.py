"""BinaryProbsOrLogits: the parametrization shared by the families given by a success probability
`probs` or its log-odds `logits`, exactly one of them (Bernoulli, Binomial, NegativeBinomial,
Geometric, ContinuousBernoulli, LogitRelaxedBernoulli)."""

from __future__ import annotations

from scriptc.tensors import Size

from .distribution import as_size
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["BinaryProbsOrLogits"]


class BinaryProbsOrLogits:
    """Keeps the given one of `probs` / `logits` and derives the other on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def _store_probs_or_logits(self, probs, logits, *others) -> tuple:
        """Store probs or logits broadcast with `others` (returned broadcast, in order), or raise
        torch's error when not exactly one is given."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        *others, self._param = broadcast_all(*others, given)
        setattr(self, name, self._param)
        return tuple(others)

    def _expand_probs_or_logits(self, cls, batch_shape, _instance, **params):
        """expand(): `params` and whichever of probs/logits this one holds, expanded to batch_shape."""
        batch_shape = as_size(batch_shape)
        held = {name: self.__dict__[name].expand(batch_shape) for name in ("probs", "logits") if name in self.__dict__}
        new = self._expanded(cls, batch_shape, _instance, **params, **held)
        new._param = held.get("logits", held.get("probs"))
        return new


class CategoricalParameters:
    """logits, probs and param_shape of the `_categorical` a family is built on (Multinomial,
    ExpRelaxedCategorical)."""

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape


class RelaxedParameters:
    """temperature, logits and probs of the base distribution a relaxed family transforms
    (RelaxedBernoulli, RelaxedOneHotCategorical)."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
