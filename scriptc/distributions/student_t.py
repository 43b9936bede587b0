"""StudentT (torch.distributions.StudentT)."""

from __future__ import annotations

import math

import scriptc

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution, as_size
from .utils import broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom, shifted by `loc` and scaled by `scale`; rsample is
    loc + scale * X / sqrt(Z / df) with X ~ N(0, 1) and Z ~ Chi2(df)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(StudentT, batch_shape, _instance, df=self.df.expand(batch_shape),
                              loc=self.loc.expand(batch_shape), scale=self.scale.expand(batch_shape),
                              _chi2=self._chi2.expand(batch_shape))

    @property
    def mean(self):
        # undefined for df <= 1
        return self.loc.masked_fill(self.df <= 1, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        variance = scriptc.where(self.df > 2, finite, math.inf)
        return variance.masked_fill(self.df <= 1, math.nan)

    def rsample(self, sample_shape=()):
        x = standard_normal(self._extended_shape(sample_shape), self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_normalizer = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                          + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y ** 2.0 / self.df).log1p() - log_normalizer

    def entropy(self):
        lbeta = (0.5 * self.df).lgamma() + math.lgamma(0.5) - (0.5 * (self.df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma() - (0.5 * self.df).digamma())
                + 0.5 * self.df.log() + lbeta)
