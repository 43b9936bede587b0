"""MultivariateNormal (torch.distributions.MultivariateNormal)."""

from __future__ import annotations

import math

import numpy as np

import scriptc
from scriptc.tensors import Size

from . import constraints
from .centered import CenteredAtLoc
from .distribution import Distribution, as_size
from .utils import lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _solve_lower(lower, rhs):
    """lower^-1 rhs for lower-triangular matrices, batch dims broadcast."""
    batch = np.broadcast_shapes(tuple(lower.shape[:-2]), tuple(rhs.shape[:-2]))
    return scriptc.linalg.solve(lower.expand(batch + tuple(lower.shape[-2:])), rhs.expand(batch + tuple(rhs.shape[-2:])))


def _batch_mahalanobis(lower, x):
    """The squared Mahalanobis distance x^T (L L^T)^-1 x for each x, L broadcast over x's batch dims."""
    return _solve_lower(lower, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision^-1, without inverting the precision matrix (torch's way:
    the Cholesky factor of the flipped matrix, flipped back and inverted)."""
    flipped = scriptc.linalg.cholesky(precision.flip((-2, -1)))
    inverse_factor = flipped.flip((-2, -1)).mT
    identity = scriptc.eye(precision.shape[-1], dtype=precision.dtype)
    return _solve_lower(inverse_factor, identity)


class MultivariateNormal(CenteredAtLoc, Distribution):
    """A normal distribution over vectors, given by `loc` and exactly one of `covariance_matrix`,
    `precision_matrix` or `scale_tril` (a lower-triangular factor with positive diagonal); rsample
    is loc + L eps with L the Cholesky factor of the covariance."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {name: value for name, value in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                                                 ("precision_matrix", precision_matrix)) if value is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = Size(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = scriptc.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape) * 2
        matrices = {name: self.__dict__[name].expand(cov_shape)
                    for name in ("covariance_matrix", "scale_tril", "precision_matrix") if name in self.__dict__}
        return self._expanded(MultivariateNormal, batch_shape, _instance,
                              loc=self.loc.expand(tuple(batch_shape) + tuple(self.event_shape)),
                              _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril, **matrices)

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        lower = self._unbroadcasted_scale_tril
        inverse = _solve_lower(lower, scriptc.eye(lower.shape[-1], dtype=lower.dtype))
        return (inverse.mT @ inverse).expand(self._matrix_shape())

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self):
        entropy = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return entropy if len(self._batch_shape) == 0 else entropy.expand(tuple(self._batch_shape))
