"""Special functions numpy lacks, and array-module helpers, written against an array module `xp`."""

from __future__ import annotations

import contextlib
import math

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SERIES_TERMS = 40       # Taylor series for |x| < 2: the last term is below 1e-23
_FRACTION_TERMS = 60     # Laplace continued fraction of erfc for |x| >= 2


def erf(xp, x):
    """erf to about 1e-13 absolute in float64 (Taylor series near 0, erfc's continued fraction beyond).

    Computed in float64 and returned in x's dtype.
    """
    dtype = x.dtype
    a = xp.abs(x.astype(xp.float64))
    near = xp.minimum(a, 2.0)
    square = near * near
    term = near.copy()
    total = near.copy()
    for n in range(1, _SERIES_TERMS):
        term = term * (-square) / n
        total = total + term / (2 * n + 1)
    series = _TWO_OVER_SQRT_PI * total

    far = xp.maximum(a, 2.0)
    fraction = far.copy()
    for k in range(_FRACTION_TERMS, 0, -1):
        fraction = far + (k / 2.0) / fraction
    erfc_far = xp.exp(-far * far) / (math.sqrt(math.pi) * fraction)
    result = xp.where(a < 2.0, series, 1.0 - erfc_far)
    return (xp.sign(x) * result).astype(dtype, copy=False)


def quiet_float_errors(xp, overflow: bool = False):
    """numpy's errstate(divide, invalid; also over with overflow=True) set to ignore; cupy never warns
    about floating-point errors (it has no errstate), so there it does nothing."""
    if hasattr(xp, "errstate"):
        ignored = {"divide": "ignore", "invalid": "ignore"}
        if overflow:
            ignored["over"] = "ignore"
        return xp.errstate(**ignored)
    return contextlib.nullcontext()
