"""Helpers shared by the distributions (torch.distributions.utils)."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import numpy as np

import scriptc
from scriptc.autograd import enable_grad
from scriptc.tensors import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property", "euler_constant",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Tensors of one broadcast shape from tensors and numbers (numbers take the first tensor's dtype)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), scriptc.get_default_dtype())
    return tuple(scriptc.broadcast_tensors(*(v if isinstance(v, Tensor) else scriptc.tensor(v, dtype=dtype)
                                             for v in values)))


def finfo(dtype):
    """numpy's finfo for a scriptc floating dtype (eps, tiny, min, max)."""
    return np.finfo(dtype.np)


def standard_normal(shape, dtype) -> Tensor:
    return scriptc.randn(tuple(shape), dtype=dtype)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the rightmost `dim` dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """sigmoid (binary) or softmax over the last dim."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept in [eps, 1 - eps], so their logs are finite."""
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log(p) (categorical) or log(p) - log(1 - p) (binary), of the clamped probabilities."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:
    """A property computed on first access (with grad enabled) and then stored on the instance,
    as torch's: Categorical keeps either `probs` or `logits` and derives the other on demand."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n: int, diag: int) -> Tensor:
    arange = scriptc.arange(n)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from diagonal `diag` down) of the last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of tril_matrix_to_vec: a square matrix with `vec` below diagonal `diag`, zeros above."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > float(finfo(vec.dtype).eps):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag)] = vec
    return mat
