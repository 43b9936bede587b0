"""Window functions (hann, hamming, blackman, bartlett, kaiser) and logspace: factories computed in float64
and returned in the requested dtype (float32 by default), with torch's periodic rule: a periodic window of
length N is the symmetric one of length N + 1 without its last point."""

from __future__ import annotations

import math

import numpy as np

from scriptc.types import TensorType, default_float

from . import register
from .bessel import bessel_i
from .factory import _np_dtype
from .rules import is_known
from .schema import FACTORY


def _symmetric(name, shape):
    """A window kernel (arguments in schema order: length, periodic, the window's parameters, dtype, device)
    from shape(xp, n, length, *parameters) evaluated at n = 0..length-1 of the symmetric window."""
    def kernel(xp, window_length, periodic, *rest):
        params, dtype = rest[:-2], rest[-2]
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
        if window_length <= 1:
            return xp.ones(window_length, dtype=_np_dtype(dtype))
        length = window_length + 1 if periodic else window_length
        values = shape(xp, xp.arange(length, dtype=xp.float64), length, *params)
        return values[:window_length].astype(_np_dtype(dtype))
    return kernel


def _cosine_sum(*coefficients):
    """a0 - a1 cos(2 pi n / (N - 1)) + a2 cos(4 pi n / (N - 1)) - ..."""
    def shape(xp, n, length):
        return sum((-1) ** k * a * xp.cos(2 * math.pi * k * n / (length - 1)) for k, a in enumerate(coefficients))
    return shape


def _window_rule(window_length, *rest, dtype=None, device=None):
    return TensorType(dtype or default_float(), (window_length if is_known(window_length) else None,))


def _register_window(name, params, shape, doc):
    register(f"{name}(window_length: int, periodic: bool = True{params}, *, dtype: ScalarType? = None, "
             "device: Device? = None) -> Tensor", FACTORY,
             _symmetric(name, shape), shape=_window_rule, method=False,
             doc=doc)


_register_window("hann_window", "", _cosine_sum(0.5, 0.5), "The Hann window 0.5 - 0.5 cos(2 pi n / (N - 1)).")
_register_window("hamming_window", ", alpha: float = 0.54, beta: float = 0.46",
                 lambda xp, n, length, alpha=0.54, beta=0.46: _cosine_sum(alpha, beta)(xp, n, length),
                 "The Hamming window alpha - beta cos(2 pi n / (N - 1)).")
_register_window("blackman_window", "", _cosine_sum(0.42, 0.5, 0.08),
                 "The Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)).")
_register_window("bartlett_window", "", lambda xp, n, length: 1 - xp.abs(2 * n / (length - 1) - 1),
                 "The triangular Bartlett window 1 - |2 n / (N - 1) - 1|.")
_register_window("kaiser_window", ", beta: float = 12.0",
                 lambda xp, n, length, beta=12.0: bessel_i(xp, beta * xp.sqrt(xp.clip(
                     1 - (2 * n / (length - 1) - 1) ** 2, 0, None)), 0, scaled=False) / bessel_i(
                     xp, np.float64(beta), 0, scaled=False),
                 "The Kaiser window I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta).")


def _logspace_kernel(xp, start, end, steps, base=10.0, dtype=None, device=None):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return (float(base) ** xp.linspace(start, end, steps, dtype=xp.float64)).astype(_np_dtype(dtype))


register("logspace(start: Scalar, end: Scalar, steps: int, base: float = 10.0, *, dtype: ScalarType? = None, "
         "device: Device? = None) -> Tensor", FACTORY, _logspace_kernel,
         shape=lambda a, b, steps, base=10.0, dtype=None, device=None: TensorType(
             dtype or default_float(), (steps if is_known(steps) else None,)),
         method=False, doc="base ** linspace(start, end, steps).")
