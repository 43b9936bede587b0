"""Wishart (torch.distributions.Wishart)."""

from __future__ import annotations

import math
import warnings
from numbers import Number

import numpy as np

import scriptc
from scriptc.tensors import Size

from . import constraints
from .chi2 import Chi2
from .distribution import as_size
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import finfo, lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma function: sum_i digamma(x - i / 2), i < p."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return (x.unsqueeze(-1) - scriptc.arange(p, dtype=x.dtype).div(2).expand(tuple(x.shape) + (-1,))).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over positive-definite matrices with `df` degrees of freedom and
    scale given by exactly one of `covariance_matrix`, `precision_matrix` or `scale_tril`;
    rsample is Bartlett's decomposition (chi-squared diagonal, normal lower triangle)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = scriptc.tensor(df, dtype=param.dtype)
        else:
            batch_shape = Size(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = Size(tuple(param.shape[-2:]))
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        matrix_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                          stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = scriptc.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape):
        """Chi2(df - i) for the i-th diagonal entry of Bartlett's factor."""
        offsets = scriptc.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        params = {name: self.__dict__[name].expand(cov_shape)
                  for name in ("covariance_matrix", "scale_tril", "precision_matrix") if name in self.__dict__}
        new = self._expanded(Wishart, batch_shape, _instance,
                             _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril.expand(cov_shape),
                             df=self.df.expand(tuple(batch_shape)),
                             _batch_dims=[-(x + 1) for x in range(len(batch_shape))], **params)
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        identity = scriptc.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return scriptc.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_matrix(self, df):
        return df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        return self._df_matrix(factor.masked_fill(factor <= 0, math.nan)) * self.covariance_matrix

    @property
    def variance(self):
        v = self.covariance_matrix
        diag_v = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (v.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        eps = float(finfo(self.df.dtype).eps)
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps).diag_embed(dim1=-2, dim2=-1)
        normal = scriptc.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p, p), dtype=diagonal.dtype)
        chol = self._unbroadcasted_scale_tril @ (diagonal + normal.tril(-1))
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett samples; singular ones (possible when df < ndim) are redrawn up to
        `max_try_correction` (10) times, with torch's warning."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = as_size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redrawn = self._bartlett_sampling(sample_shape)
                sample = scriptc.where(is_singular.view(tuple(is_singular.shape) + (1,) * (sample.dim()
                                                                                            - is_singular.dim())),
                                       redrawn, sample)
                is_singular = ~self.support.check(sample)
                if self._batch_shape:
                    is_singular = is_singular.amax(self._batch_dims)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + log_det_scale) - scriptc.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * scriptc.linalg.slogdet(value).logabsdet
                - scriptc.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + log_det_scale) + scriptc.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)
