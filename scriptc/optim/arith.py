"""The in-place updates optimizers make, rounded as torch's CPU kernels round them.

torch's CPU kernels compute `x.add_(y, alpha=a)`, `x.addcmul_(y, z, value=v)` and `x.lerp_(y, w)`
with one fused multiply-add, and divide by a Python number by multiplying with its reciprocal;
numpy rounds every step. For float32 the fused forms are computed in float64 (a product of two
float32 values is exact there) and rounded once, so float32 parameters and optimizer states follow
torch's bit for bit; other dtypes round each step, within an ulp of torch. Every function takes
and returns numpy arrays; the trailing-underscore ones write into their first argument.
"""

from __future__ import annotations

import numpy as np


def _as(dtype, value):
    """A Python number (or 0-d array) rounded to `dtype`, as torch rounds a scalar operand."""
    return dtype.type(value)


def _fused(a, b, c, out: np.ndarray) -> np.ndarray:
    """out = a * b + c, rounded once when out is float32."""
    if out.dtype == np.float32:
        wide = np.multiply(a, b, dtype=np.float64)
        wide += c
        np.copyto(out, wide, casting="same_kind")
    else:
        product = np.multiply(a, b, dtype=out.dtype)
        np.add(product, c, out=out)
    return out


def add(x: np.ndarray, other, alpha: float = 1.0) -> np.ndarray:
    """x + alpha * other (torch's `x.add(other, alpha=alpha)`), a new array."""
    return _fused(_as(x.dtype, alpha), other, x, np.empty_like(x))


def add_(x: np.ndarray, other, alpha: float = 1.0) -> np.ndarray:
    """x += alpha * other (torch's `x.add_(other, alpha=alpha)`)."""
    return _fused(_as(x.dtype, alpha), other, x, x)


def mul_(x: np.ndarray, factor) -> np.ndarray:
    x *= _as(x.dtype, factor) if np.ndim(factor) == 0 else factor
    return x


def div(x: np.ndarray, divisor: float) -> np.ndarray:
    """x / divisor for a Python number: torch multiplies by the rounded reciprocal."""
    one = _as(x.dtype, 1)
    return x * (one / _as(x.dtype, divisor))


def addcmul_(x: np.ndarray, t1, t2, value: float = 1.0) -> np.ndarray:
    """x += value * t1 * t2 (torch's `addcmul_`)."""
    return _fused(_as(x.dtype, value) * t1, t2, x, x)


def addcdiv_(x: np.ndarray, t1, t2, value: float = 1.0) -> np.ndarray:
    """x += value * t1 / t2 (torch's `addcdiv_`, which multiplies before it divides)."""
    x += _as(x.dtype, value) * t1 / t2
    return x


def lerp_(x: np.ndarray, end, weight: float) -> np.ndarray:
    """x += weight * (end - x), from whichever end is nearer, as torch's `lerp_`."""
    w = _as(x.dtype, weight)
    difference = end - x
    if abs(w) < 0.5:
        return _fused(w, difference, x, x)
    return _fused(w - _as(x.dtype, 1), difference, end, x)
