"""ExpRelaxedCategorical and RelaxedOneHotCategorical (torch.distributions.relaxed_categorical):
the Gumbel-softmax / Concrete distribution."""

from __future__ import annotations

import scriptc

from . import constraints
from .categorical import Categorical
from .distribution import Distribution, as_size
from .probs_logits import CategoricalParameters, RelaxedParameters
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(CategoricalParameters, Distribution):
    """The log of a RelaxedOneHotCategorical sample: log_softmax((logits + Gumbel noise) / temperature),
    parameterized by `temperature` and `probs` or `logits`."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(ExpRelaxedCategorical, batch_shape, _instance, temperature=self.temperature,
                              _categorical=self._categorical.expand(batch_shape))


    def rsample(self, sample_shape=()):
        uniforms = clamp_probs(scriptc.rand(tuple(self._extended_shape(sample_shape)), dtype=self.logits.dtype))
        gumbels = -(-uniforms.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        num_events = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = (scriptc.full_like(self.temperature, float(num_events)).lgamma()
                     - self.temperature.log().mul(-(num_events - 1)))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(RelaxedParameters, TransformedDistribution):
    """A continuous relaxation of OneHotCategorical on the simplex (Gumbel-softmax): the softmax of
    (logits + Gumbel noise) / temperature; reparameterized, so gradients reach logits and temperature."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))
