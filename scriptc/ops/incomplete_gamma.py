"""igamma / igammac (torch.special.gammainc / gammaincc): the regularized lower and upper incomplete gamma
functions P(a, x) and Q(a, x) = 1 - P(a, x), by the series below x = a + 1 and the continued fraction
above it (where each converges fast), in float64."""

from __future__ import annotations

import math

from scriptc.types import TensorType, from_numpy_dtype

from . import register
from .rules import broadcast_shapes, promote_types, scalar_type_name
from .schema import OPAQUE
from .special import array_math, lgamma_formula, quiet_float_errors

_ITERATIONS = 400
_TINY = 1e-300


def _log_prefactor(xp, a, x):
    """log(x^a e^-x / Gamma(a))."""
    return a * xp.log(x) - x - lgamma_formula(array_math(xp), a)


def _series(xp, a, x):
    """P(a, x) = x^a e^-x / Gamma(a) * sum x^n / (a (a+1) ... (a+n)), for x < a + 1."""
    term = 1.0 / a
    total = term
    for n in range(1, _ITERATIONS):
        term = term * x / (a + n)
        total = total + term
    return total * xp.exp(_log_prefactor(xp, a, x))


def _continued_fraction(xp, a, x):
    """Q(a, x) by Lentz's method on its continued fraction, for x >= a + 1."""
    b = x + 1 - a
    c = xp.full(b.shape, 1 / _TINY)
    d = 1 / b
    h = d
    for i in range(1, _ITERATIONS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        h = h * d * c
    return xp.exp(_log_prefactor(xp, a, x)) * h


def _lower(xp, a, x):
    """P(a, x) elementwise, with torch's values at the edges (x = 0, a = 0, x = inf, negative inputs)."""
    a, x = xp.broadcast_arrays(a.astype(xp.float64), x.astype(xp.float64))
    with quiet_float_errors(xp):
        use_series = x < a + 1
        safe_a, safe_x = xp.where(a > 0, a, 1.0), xp.where(x > 0, x, 1.0)
        inner = xp.where(use_series, _series(xp, safe_a, xp.where(use_series, safe_x, 0.5)),
                         1 - _continued_fraction(xp, safe_a, xp.where(use_series, safe_a + 2, safe_x)))
    at_infinity = xp.where(a == math.inf, xp.where(x == math.inf, math.nan, 0.0), xp.where(x == math.inf, 1.0, inner))
    out = xp.where(a == 0, xp.where(x > 0, 1.0, math.nan), xp.where(x == 0, 0.0, at_infinity))
    return xp.where((a < 0) | (x < 0) | xp.isnan(a) | xp.isnan(x), math.nan, out)


def _checked(name: str, a, x):
    """The dtype torch computes in: the operands promoted, an integer or bool one joining the other's
    floating dtype; torch's error when both are integers or bools."""
    floats = [v.dtype for v in (a, x) if v.dtype.kind == "f"]
    if not floats:
        promoted = promote_types([TensorType(from_numpy_dtype(v.dtype)) for v in (a, x)])
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{scalar_type_name(promoted)}'")
    return max(floats, key=lambda d: d.itemsize)


def _igamma_kernel(xp, a, x):
    dtype = _checked("igamma", a, x)
    return _lower(xp, a, x).astype(dtype)


def _igammac_kernel(xp, a, x):
    dtype = _checked("igammac", a, x)
    return (1 - _lower(xp, a, x)).astype(dtype)


def _density(xp, a, x):
    """dP/dx = x^(a-1) e^-x / Gamma(a)."""
    with quiet_float_errors(xp):
        return xp.exp((a - 1) * xp.log(x) - x - lgamma_formula(array_math(xp), a))


def _rule(a, x):
    return TensorType(promote_types([a, x]), broadcast_shapes(a.shape, x.shape), a.device)


# torch has no derivative for a (its gradient is None here; torch raises when one is asked for).
register("igamma(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _igamma_kernel, shape=_rule,
         grad=lambda ctx, g: (None, g * _density(ctx.xp, ctx.self, ctx.other)), save=("self", "other"),
         inplace=True, doc="The regularized lower incomplete gamma function P(self, other).")
register("igammac(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _igammac_kernel, shape=_rule,
         grad=lambda ctx, g: (None, -g * _density(ctx.xp, ctx.self, ctx.other)), save=("self", "other"),
         inplace=True, doc="The regularized upper incomplete gamma function Q(self, other) = 1 - P(self, other).")
