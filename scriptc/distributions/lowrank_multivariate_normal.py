"""LowRankMultivariateNormal (torch.distributions.LowRankMultivariateNormal)."""

from __future__ import annotations

import math

import scriptc
from scriptc.tensors import Size

from . import constraints
from .centered import CenteredAtLoc
from .distribution import Distribution, as_size
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import lazy_property, standard_normal

__all__ = ["LowRankMultivariateNormal"]


def _add_identity(matrix):
    return matrix + scriptc.eye(matrix.shape[-1], dtype=matrix.dtype)


def _batch_capacitance_tril(cov_factor, cov_diag):
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W (m x m for a rank-m factor W)."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    return scriptc.linalg.cholesky(_add_identity(wt_dinv @ cov_factor))


def _batch_lowrank_logdet(cov_diag, capacitance_tril):
    """log det(W W^T + D) by the matrix determinant lemma: log det(capacitance) + log det(D)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + cov_diag.log().sum(-1)


def _batch_lowrank_mahalanobis(cov_factor, cov_diag, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    wt_dinv_x = _batch_mv(cov_factor.mT / cov_diag.unsqueeze(-2), x)
    return (x.pow(2) / cov_diag).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(CenteredAtLoc, Distribution):
    """A multivariate normal whose covariance is cov_factor @ cov_factor.T + diag(cov_diag), with
    a cov_factor of shape event x rank; log_prob and entropy cost O(rank^3), not O(event^3)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(tuple(loc.shape[-1:]))
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = scriptc.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                         cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        return self._expanded(LowRankMultivariateNormal, batch_shape, _instance, loc=self.loc.expand(loc_shape),
                              cov_diag=self.cov_diag.expand(loc_shape),
                              cov_factor=self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:])),
                              _unbroadcasted_cov_factor=self._unbroadcasted_cov_factor,
                              _unbroadcasted_cov_diag=self._unbroadcasted_cov_diag,
                              _capacitance_tril=self._capacitance_tril)

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # D^1/2 chol(I + D^-1/2 W W^T D^-1/2): the Cholesky factor of W W^T + D, well conditioned
        cov_diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / cov_diag_sqrt
        scale_tril = cov_diag_sqrt * scriptc.linalg.cholesky(_add_identity(dinvsqrt_w @ dinvsqrt_w.mT))
        return scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        covariance = (self._unbroadcasted_cov_factor @ self._unbroadcasted_cov_factor.mT
                      + scriptc.diag_embed(self._unbroadcasted_cov_diag))
        return covariance.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W capacitance^-1 W^T D^-1
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = scriptc.linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        precision = scriptc.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), self.loc.dtype)
        eps_d = standard_normal(shape, self.loc.dtype)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                                 value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + mahalanobis)

    def entropy(self):
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return entropy if len(self._batch_shape) == 0 else entropy.expand(tuple(self._batch_shape))
