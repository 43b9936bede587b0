"""The ops behind torch.special that torch has no top-level name for (`special_<name>`, as in ATen), plus
i0 and mvlgamma (torch.i0, torch.mvlgamma and their Tensor methods).

The normal-distribution functions are pointwise formulas (normal_dist.py); the Bessel functions, zeta and
the orthogonal polynomials are opaque array kernels (bessel.py) with a fixed number of whole-array steps.
"""

from __future__ import annotations

import math

from scriptc.types import TensorType

from . import bessel as B
from . import expr as E
from . import normal_dist as N
from . import register
from . import special as S
from .pointwise import _binary, _unary
from .rules import broadcast_shapes, output_dtype, promote_types
from .schema import OPAQUE, PROMOTE_FLOAT
from .special import EXPR_MATH, on_arrays, quiet_float_errors

_SQRT_2PI = math.sqrt(2 * math.pi)


# --- normal distribution, erfcx, entr, xlog1py: pointwise formulas ---------------------------------------------

def _formula_op(name, formula, grad, save, doc):
    _unary(name, on_arrays(formula), lambda x: formula(EXPR_MATH, E.cast(x, "float64")), grad=grad, save=save,
           inplace=False, doc=doc)


_formula_op("special_entr", N.entr_formula, lambda ctx, g: (-g * (ctx.xp.log(ctx.self) + 1),), ("self",),
            "-x log x elementwise (0 at 0, -inf below).")
_formula_op("special_erfcx", N.erfcx_formula,
            lambda ctx, g: (g * (2 * ctx.self * ctx.out - S.TWO_OVER_SQRT_PI),), ("self", "out"),
            "The scaled complementary error function exp(x^2) * erfc(x).")
_formula_op("special_ndtr", N.ndtr_formula,
            lambda ctx, g: (g * ctx.xp.exp(-0.5 * ctx.self * ctx.self) / _SQRT_2PI,), ("self",),
            "The standard normal CDF.")
_formula_op("special_log_ndtr", N.log_ndtr_formula,
            lambda ctx, g: (g * ctx.xp.exp(-0.5 * ctx.self * ctx.self - ctx.out) / _SQRT_2PI,), ("self", "out"),
            "log of the standard normal CDF, accurate far into the left tail.")
_formula_op("special_ndtri", N.ndtri_formula,
            lambda ctx, g: (g * _SQRT_2PI * ctx.xp.exp(0.5 * ctx.out * ctx.out),), ("out",),
            "The standard normal quantile (the inverse of ndtr).")


def _xlog1py_kernel(xp, x, y):
    with quiet_float_errors(xp):
        return xp.where(xp.equal(x, 0) & ~xp.isnan(y), 0.0, x * xp.log1p(y)).astype(xp.result_type(x, y))


def _xlog1py_scalar(x, y):
    return E.select(E.and_(E.eq(x, 0), E.eq(y, y)), 0.0, x * E.log1p(y))


_binary("special_xlog1py", _xlog1py_kernel, _xlog1py_scalar, dtype_rule=PROMOTE_FLOAT, reflected=True,
        inplace=False, save=("self", "other"),
        grad=lambda ctx, g: (g * ctx.xp.where(ctx.xp.equal(ctx.self, 0), 0.0, ctx.xp.log1p(ctx.other)),
                             g * ctx.self / (ctx.other + 1)),
        doc="x * log1p(y), 0 where x is 0 (unless y is nan).")


# --- Bessel functions, zeta, polynomials: opaque array kernels --------------------------------------------------

def _elementwise_rule(*args):
    """Broadcast the tensor arguments; the promoted dtype, integers as float32."""
    tensors = [a for a in args if isinstance(a, TensorType)]
    return TensorType(output_dtype(PROMOTE_FLOAT, promote_types(args)), broadcast_shapes(*(t.shape for t in tensors)),
                      tensors[0].device)


def _unary_kernel(name, kernel, grad=None, save=(), doc="", **fields):
    register(f"{name}(self: Tensor) -> Tensor", OPAQUE, kernel, shape=_elementwise_rule, dtype_rule=PROMOTE_FLOAT,
             grad=grad, save=save, doc=doc, **fields)


def _i0(xp, x):
    return B.bessel_i(xp, x, 0, scaled=False)


def _i1(xp, x):
    return B.bessel_i(xp, x, 1, scaled=False)


def _i0e(xp, x):
    return B.bessel_i(xp, x, 0, scaled=True)


def _i1e(xp, x):
    return B.bessel_i(xp, x, 1, scaled=True)


def _i1_slope(xp, x, i0, i1):
    """d/dx I1 = I0 - I1 / x (1/2 at 0), for scaled or unscaled values alike."""
    safe = xp.where(xp.equal(x, 0), 1.0, x)
    return xp.where(xp.equal(x, 0), 0.5, i0 - i1 / safe)


_unary_kernel("i0", _i0, grad=lambda ctx, g: (g * _i1(ctx.xp, ctx.self),), save=("self",), inplace=True,
              doc="The modified Bessel function of the first kind, order 0.")
_unary_kernel("special_i0e", _i0e, save=("self", "out"),
              grad=lambda ctx, g: (g * (_i1e(ctx.xp, ctx.self) - ctx.xp.sign(ctx.self) * ctx.out),),
              doc="exp(-|x|) * i0(x).")
_unary_kernel("special_i1", _i1, save=("self", "out"),
              grad=lambda ctx, g: (g * _i1_slope(ctx.xp, ctx.self, _i0(ctx.xp, ctx.self), ctx.out),),
              doc="The modified Bessel function of the first kind, order 1.")
_unary_kernel("special_i1e", _i1e, save=("self", "out"),
              grad=lambda ctx, g: (g * (_i1_slope(ctx.xp, ctx.self, _i0e(ctx.xp, ctx.self), ctx.out)
                                        - ctx.xp.sign(ctx.self) * ctx.out),),
              doc="exp(-|x|) * i1(x).")
for _order in (0, 1):
    _unary_kernel(f"special_modified_bessel_k{_order}",
                  lambda xp, x, order=_order: B.bessel_k(xp, x, order, scaled=False),
                  doc=f"The modified Bessel function of the second kind, order {_order}.")
    _unary_kernel(f"special_scaled_modified_bessel_k{_order}",
                  lambda xp, x, order=_order: B.bessel_k(xp, x, order, scaled=True),
                  doc=f"exp(x) * modified_bessel_k{_order}(x).")
    _unary_kernel(f"special_bessel_j{_order}", lambda xp, x, order=_order: B.bessel_j(xp, x, order),
                  doc=f"The Bessel function of the first kind, order {_order}.")
    _unary_kernel(f"special_bessel_y{_order}", lambda xp, x, order=_order: B.bessel_y(xp, x, order),
                  doc=f"The Bessel function of the second kind, order {_order} (-inf at 0, nan below 0).")
_unary_kernel("special_airy_ai", B.airy_ai, doc="The Airy function Ai(x) (nan at +-inf, 0 past 103.892).")
_unary_kernel("special_spherical_bessel_j0", B.spherical_bessel_j0, doc="sin(x) / x (1 at 0).")


def _zeta_grad(ctx, g):
    xp = ctx.xp
    s, q = xp.asarray(ctx.self, dtype=xp.float64), xp.asarray(ctx.other, dtype=xp.float64)
    return (None, g * -s * B.zeta(xp, s + 1, q) if hasattr(ctx.other, "shape") else None)


register("special_zeta(self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", OPAQUE, B.zeta, shape=_elementwise_rule,
         dtype_rule=PROMOTE_FLOAT, grad=_zeta_grad, save=("self", "other"),
         doc="The Hurwitz zeta function: the sum over k >= 0 of (other + k) ** -self.")

for _family in [*B.POLYNOMIALS, *(f"shifted_{name}" for name in B.POLYNOMIALS if name.startswith("chebyshev"))]:
    register(f"special_{_family}(x: Tensor|Scalar, n: Tensor|Scalar) -> Tensor", OPAQUE,
             lambda xp, x, n, family=_family: B.polynomial(xp, family, x, n), shape=_elementwise_rule,
             dtype_rule=PROMOTE_FLOAT, doc=f"The {_family.replace('_', ' ')} of degree n at x.")


# --- mvlgamma -------------------------------------------------------------------------------------------------

def _mvlgamma_kernel(xp, x, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    total = sum(S.lgamma(xp, x - j / 2) for j in range(p))
    return (total + p * (p - 1) / 4 * math.log(math.pi)).astype(x.dtype)


register("mvlgamma(self: Tensor, p: int) -> Tensor", OPAQUE, _mvlgamma_kernel, shape=_elementwise_rule,
         dtype_rule=PROMOTE_FLOAT, save=("self",), inplace=True,
         grad=lambda ctx, g: (g * sum(S.digamma(ctx.xp, ctx.self - j / 2) for j in range(ctx.p)), None),
         doc="The multivariate log-gamma function of dimension p.")
