"""ExponentialFamily (torch.distributions.ExponentialFamily): the base of distributions with density
h(x) exp(<t(x), theta> - F(theta)); Normal, Bernoulli, Categorical's relatives, Gamma, Beta,
Dirichlet and Exponential derive from it, as in torch, each with its own entropy."""

from __future__ import annotations

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses may give `_natural_params`, `_log_normalizer(*natural_params)` and `_mean_carrier_measure`."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError
