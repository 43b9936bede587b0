"""torch.masked: reductions and normalizations that see only the elements a boolean mask keeps.

Each function fills the masked-out elements with the identity of its operation (0 for sum, 1 for
prod, -inf for amax and softmax, ...) and runs the ordinary op, as torch does, so a slice with no
element kept gives that identity (sum 0, amax -inf), or NaN where the op divides by the count
(mean, var, std, median) or normalizes over nothing (softmax rows). `mask=None` keeps everything;
a mask broadcasts to the input's shape. Built from ops of the op table: autograd is theirs.
"""

from __future__ import annotations

import math
from typing import Optional

from scriptc.tensors import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp", "mean",
           "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]


def _cast(input: Tensor, dtype) -> Tensor:
    return input if dtype is None else input.to(dtype)


def _kept(input: Tensor, mask: Optional[Tensor]) -> Optional[Tensor]:
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked: mask must be a Tensor or None, not {type(mask).__name__}")
    return mask.bool().expand(input.shape)


def _filled(input: Tensor, mask: Optional[Tensor], value) -> Tensor:
    kept = _kept(input, mask)
    return input if kept is None else input.masked_fill(~kept, value)


def _extreme(input: Tensor, largest: bool):
    """The identity of amax (largest=False: its lowest value) or amin for input's dtype."""
    import scriptc

    if input.dtype.is_floating_point or input.is_complex():
        return -math.inf if not largest else math.inf
    if input.dtype is scriptc.bool:
        return largest
    info = scriptc.iinfo(input.dtype)
    return info.max if largest else info.min


def _dims(input: Tensor, dim) -> tuple:
    if dim is None:
        return tuple(range(input.dim()))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _count(input: Tensor, mask: Optional[Tensor], dim, keepdim: bool) -> Tensor:
    kept = _kept(input, mask)
    ones = input.new_ones(input.shape) if kept is None else kept.to(input.dtype)
    return ones.sum(_dims(input, dim), keepdim=keepdim)


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The sum of the kept elements (0 where none is kept)."""
    return _cast(_filled(input, mask, 0), dtype).sum(_dims(input, dim), keepdim=keepdim)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The product of the kept elements (1 where none is kept)."""
    filled = _cast(_filled(input, mask, 1), dtype)
    if dim is None:
        return filled.prod() if not keepdim else filled.reshape(-1).prod().reshape([1] * input.dim())
    return filled.prod(dim, keepdim=keepdim)


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The largest kept element (the dtype's lowest value, -inf for floats, where none is kept)."""
    return _cast(_filled(input, mask, _extreme(input, False)), dtype).amax(_dims(input, dim), keepdim=keepdim)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The smallest kept element (the dtype's highest value, inf for floats, where none is kept)."""
    return _cast(_filled(input, mask, _extreme(input, True)), dtype).amin(_dims(input, dim), keepdim=keepdim)


def argmax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The index of the largest kept element, in input's dtype (or dtype=), as torch gives it."""
    found = _filled(input, mask, _extreme(input, False)).argmax(dim, keepdim=keepdim)
    return found.to(dtype or input.dtype)


def argmin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The index of the smallest kept element, in input's dtype (or dtype=), as torch gives it."""
    found = _filled(input, mask, _extreme(input, True)).argmin(dim, keepdim=keepdim)
    return found.to(dtype or input.dtype)


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The mean of the kept elements (NaN where none is kept)."""
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, mask, dim, keepdim).to(total.dtype)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None,
           mask: Optional[Tensor] = None) -> Tensor:
    """The (lower) median of the kept elements along dim (NaN where none is kept)."""
    filled = _cast(_filled(input, mask, math.nan), dtype)
    return filled.nanmedian(dim, keepdim=keepdim).values


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
              mask: Optional[Tensor] = None) -> Tensor:
    """log(sum(exp)) of the kept elements (-inf where none is kept)."""
    return _cast(_filled(input, mask, -math.inf), dtype).logsumexp(_dims(input, dim), keepdim=keepdim)


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask: Optional[Tensor] = None,
              other_mask: Optional[Tensor] = None) -> Tensor:
    """logaddexp of the two inputs, each masked-out element counting as -inf."""
    return _cast(_filled(input, input_mask, -math.inf), dtype).logaddexp(
        _cast(_filled(other, other_mask, -math.inf), dtype))


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask: Optional[Tensor] = None) -> Tensor:
    """The vector norm of the kept elements (0 where none is kept; inf for ord=-inf)."""
    from scriptc import linalg

    filled = _cast(_filled(input, mask, math.inf if ord == -math.inf else 0), dtype)
    return linalg.vector_norm(filled, ord, _dims(input, dim), keepdim=keepdim)


def _variance(input: Tensor, dim, unbiased, correction, keepdim: bool, dtype, mask) -> Tensor:
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _dims(input, dim)
    value = _cast(input, dtype)
    centred = _filled(value - mean(value, dims, keepdim=True, mask=mask), mask, 0)
    squares = (centred * centred.conj()).real if centred.is_complex() else centred * centred
    # (no more elements kept than the correction: 0 / 0, NaN, as torch gives)
    return squares.sum(dims, keepdim=keepdim) / (_count(value, mask, dims, keepdim) - correction).clamp_min(0)


def var(input: Tensor, dim=None, unbiased: Optional[bool] = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The variance of the kept elements (unbiased unless unbiased=False or correction=0; NaN where
    too few are kept)."""
    return _variance(input, dim, unbiased, correction, keepdim, dtype, mask)


def std(input: Tensor, dim=None, unbiased: Optional[bool] = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """The standard deviation of the kept elements (as var)."""
    return _variance(input, dim, unbiased, correction, keepdim, dtype, mask).sqrt()


def softmax(input: Tensor, dim: int, *, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """softmax over the kept elements; masked-out ones get 0 (a row with none kept: NaN)."""
    return _cast(_filled(input, mask, -math.inf), dtype).softmax(dim)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """log_softmax over the kept elements; masked-out ones get -inf (a row with none kept: NaN)."""
    return _cast(_filled(input, mask, -math.inf), dtype).log_softmax(dim)


def softmin(input: Tensor, dim: int, *, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """softmin over the kept elements; masked-out ones get 0 (a row with none kept: NaN)."""
    return (-_cast(_filled(input, mask, math.inf), dtype)).softmax(dim)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask: Optional[Tensor] = None) -> Tensor:
    """input divided by the ord-norm of its kept elements along dim (at least eps); masked-out ones 0."""
    filled = _cast(_filled(input, mask, 0), dtype)
    return filled / norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask).clamp_min(eps)


def cumsum(input: Tensor, dim: int, *, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """Running sum along dim with masked-out elements counting as 0."""
    return _cast(_filled(input, mask, 0), dtype).cumsum(dim)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask: Optional[Tensor] = None) -> Tensor:
    """Running product along dim with masked-out elements counting as 1."""
    return _cast(_filled(input, mask, 1), dtype).cumprod(dim)
