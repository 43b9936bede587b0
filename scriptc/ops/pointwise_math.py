"""Pointwise math beyond the basics: logs and exponentials, trigonometric and hyperbolic functions,
rounding, remainders, interpolation and the special functions (lgamma, digamma, erfinv, ...)."""

from __future__ import annotations

import math

from scriptc.types import COMPLEX, TensorType, complex128, float64, from_numpy_dtype, int32

from . import alias, register
from . import expr as E
from . import special as S
from .pointwise import _binary, _unary, check_integer_divisor
from .rules import broadcast_shapes, cpp_type_name, scalar_type_name
from .schema import OPAQUE, POINTWISE, PROMOTE, PROMOTE_FLOAT
from .special import EXPR_MATH, quiet_float_errors

LN2 = math.log(2.0)
LN10 = math.log(10.0)


def _floating_only(kernel_name: str, *arrays):
    """torch's NotImplementedError for an op that takes only floating-point tensors."""
    for a in arrays:
        kind = getattr(a, "dtype", None)
        if kind is not None and kind.kind != "f":
            raise NotImplementedError(f"\"{kernel_name}\" not implemented for "
                                      f"'{scalar_type_name(from_numpy_dtype(kind))}'")


def _quiet(fn):
    """A kernel run with numpy's floating-point warnings off (torch returns inf and nan silently)."""
    def kernel(xp, *args):
        with quiet_float_errors(xp):
            return fn(xp, *args)
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


# --- logarithms and exponentials ----------------------------------------------------------------------

_unary("log1p", _quiet(lambda xp, x: xp.log1p(x)), E.log1p, grad=lambda ctx, g: (g / (1 + ctx.self),),
       save=("self",), doc="log(1 + x), accurate for small x.")
_unary("expm1", lambda xp, x: xp.expm1(x), E.expm1, grad=lambda ctx, g: (g * (ctx.out + 1),), save=("out",),
       doc="exp(x) - 1, accurate for small x.")
_unary("log2", _quiet(lambda xp, x: xp.log2(x)), lambda x: E.log(x) * (1 / LN2),
       grad=lambda ctx, g: (g / (ctx.self * LN2),), save=("self",))
_unary("log10", _quiet(lambda xp, x: xp.log10(x)), lambda x: E.log(x) * (1 / LN10),
       grad=lambda ctx, g: (g / (ctx.self * LN10),), save=("self",))
_unary("exp2", lambda xp, x: xp.exp2(x), lambda x: E.exp(x * LN2), grad=lambda ctx, g: (g * ctx.out * LN2,),
       save=("out",))


def _ldexp_kernel(xp, x, exponent):
    dtype = xp.result_type(x, exponent)
    dtype = dtype if dtype.kind in "fc" else xp.dtype(xp.float32)
    return (x * xp.exp2(xp.asarray(exponent, dtype=dtype))).astype(dtype, copy=False)


_binary("ldexp", _ldexp_kernel, lambda x, e: x * E.exp(e * LN2), dtype_rule=PROMOTE_FLOAT, save=("self", "other"),
        grad=lambda ctx, g: (g * ctx.xp.exp2(ctx.other), g * ctx.self * ctx.xp.exp2(ctx.other) * LN2),
        doc="self * 2 ** other.", tensor_other=True)


def _frexp_kernel(xp, x):
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = xp.frexp(x)
    return mantissa, exponent.astype(xp.int32)


register("frexp(self: Tensor) -> (Tensor, Tensor)", OPAQUE, _frexp_kernel,
         shape=lambda x: (TensorType(x.dtype, x.shape, x.device), TensorType(int32, x.shape, x.device)),
         grad=lambda ctx, g: (g[0] * ctx.xp.exp2(-ctx.out[1].astype(g[0].dtype)),),
         result_names=("mantissa", "exponent"), nondifferentiable_outputs=(1,),
         doc="(mantissa, exponent) with self = mantissa * 2 ** exponent and |mantissa| in [0.5, 1).")


def _logaddexp(base_two: bool):
    def kernel(xp, a, b):
        _floating_only("logaddexp2_cpu" if base_two else "logaddexp_cpu", a, b)
        return (xp.logaddexp2 if base_two else xp.logaddexp)(a, b)

    def scalar(a, b):
        top = E.maximum(a, b)
        gap = -E.abs_(a - b)
        if base_two:
            spread = E.log1p(E.exp(gap * LN2)) * (1 / LN2)
            return E.select(E.eq(a, b), a + 1, top + spread)
        return E.select(E.eq(a, b), a + LN2, top + E.log1p(E.exp(gap)))

    def grad(ctx, g):
        xp = ctx.xp
        scale = LN2 if base_two else 1.0
        weight_a = xp.exp((ctx.self - ctx.out) * scale)
        weight_b = xp.exp((ctx.other - ctx.out) * scale)
        return g * weight_a, g * weight_b

    return kernel, scalar, grad


for _name, _two in (("logaddexp", False), ("logaddexp2", True)):
    _k, _s, _g = _logaddexp(_two)
    register(f"{_name}(self: Tensor, other: Tensor) -> Tensor", POINTWISE, _k, dtype_rule=PROMOTE, scalar=_s,
             grad=_g, save=("self", "other", "out"),
             doc=("log2(2**self + 2**other)" if _two else "log(exp(self) + exp(other))") + ", computed stably.")


def _xlogy_kernel(xp, x, y):
    with quiet_float_errors(xp):
        return xp.where(x == 0, xp.where(xp.isnan(y), y, 0), x * xp.log(y)).astype(xp.result_type(x, y), copy=False)


def _xlogy_grad(ctx, g):
    xp = ctx.xp
    x, y = ctx.self, ctx.other
    with quiet_float_errors(xp):
        d_x = g * xp.where((x == 0) & ~xp.isnan(y), 0, xp.log(y))
        d_y = g * x / y
    return d_x, d_y


register("xlogy(self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", POINTWISE, _xlogy_kernel,
         dtype_rule=PROMOTE_FLOAT, scalar=lambda x, y: E.select(E.and_(E.eq(x, 0), E.eq(y, y)), 0, x * E.log(y)),
         grad=_xlogy_grad, save=("self", "other"), inplace=True, doc="self * log(other), 0 where self is 0.")


def _logit_kernel(xp, x, eps=None):
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    with quiet_float_errors(xp):
        return xp.log(x / (1 - x))


def _logit_scalar(x, eps):
    if eps is not None:
        x = E.minimum(E.maximum(x, eps), 1 - eps)
    return E.log(x / (1 - x))


def _logit_grad(ctx, g):
    x = ctx.self
    inside = 1 if ctx.eps is None else (x >= ctx.eps) & (x <= 1 - ctx.eps)
    with quiet_float_errors(ctx.xp):
        return (g * inside / (x * (1 - x)), None)


register("logit(self: Tensor, eps: float? = None) -> Tensor", POINTWISE, _logit_kernel, dtype_rule=PROMOTE_FLOAT,
         scalar=_logit_scalar, grad=_logit_grad, save=("self",), inplace=True,
         doc="log(x / (1 - x)), with x clamped to [eps, 1 - eps] when eps is given.")


# --- trigonometric and hyperbolic -------------------------------------------------------------------------

def _trig(name, np_name, grad, save=("self",), doc=""):
    _unary(name, _quiet(lambda xp, x: getattr(xp, np_name)(x)), getattr(E, name), grad=grad, save=save, doc=doc)


_trig("tan", "tan", lambda ctx, g: (g * (1 + ctx.out * ctx.out),), save=("out",))
_trig("asin", "arcsin", lambda ctx, g: (g / ctx.xp.sqrt(1 - ctx.self * ctx.self),))
_trig("acos", "arccos", lambda ctx, g: (-g / ctx.xp.sqrt(1 - ctx.self * ctx.self),))
_trig("atan", "arctan", lambda ctx, g: (g / (1 + ctx.self * ctx.self),))
_trig("sinh", "sinh", lambda ctx, g: (g * ctx.xp.cosh(ctx.self),))
_trig("cosh", "cosh", lambda ctx, g: (g * ctx.xp.sinh(ctx.self),))
_trig("asinh", "arcsinh", lambda ctx, g: (g / ctx.xp.sqrt(ctx.self * ctx.self + 1),))
_trig("acosh", "arccosh", lambda ctx, g: (g / ctx.xp.sqrt(ctx.self * ctx.self - 1),))
_trig("atanh", "arctanh", lambda ctx, g: (g / (1 - ctx.self * ctx.self),))


def _atan2_grad(ctx, g):
    a, b = ctx.self, ctx.other
    with quiet_float_errors(ctx.xp):
        scale = g / (a * a + b * b)
    return scale * b, -scale * a


_binary("atan2", lambda xp, a, b: xp.arctan2(a, b), E.atan2, dtype_rule=PROMOTE_FLOAT, grad=_atan2_grad,
        save=("self", "other"), doc="The angle of the point (other, self), in (-pi, pi].", tensor_other=True)


def _hypot_kernel(xp, a, b):
    _floating_only("hypot_cpu", a, b)
    return xp.hypot(a, b)


_binary("hypot", _hypot_kernel, E.hypot, grad=lambda ctx, g: _hypot_grad(ctx, g), save=("self", "other", "out"),
        doc="sqrt(self**2 + other**2) without overflow.", tensor_other=True)


def _hypot_grad(ctx, g):
    xp = ctx.xp
    safe = xp.where(ctx.out == 0, 1, ctx.out)
    return g * ctx.self / safe, g * ctx.other / safe


_unary("deg2rad", lambda xp, x: x * (math.pi / 180), lambda x: x * (math.pi / 180),
       grad=lambda ctx, g: (g * (math.pi / 180),))
_unary("rad2deg", lambda xp, x: x * (180 / math.pi), lambda x: x * (180 / math.pi),
       grad=lambda ctx, g: (g * (180 / math.pi),))


def _sinc_kernel(xp, x):
    with quiet_float_errors(xp):
        angle = math.pi * x
        return xp.where(x == 0, 1.0, xp.sin(angle) / angle).astype(x.dtype if x.dtype.kind == "f" else xp.float32)


def _sinc_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    with quiet_float_errors(xp):
        angle = math.pi * x
        slope = (xp.cos(angle) * angle - xp.sin(angle)) / (angle * x)
    return (g * xp.where(x == 0, 0, slope),)


_unary("sinc", _sinc_kernel, lambda x: E.select(E.eq(x, 0), 1, E.sin(x * math.pi) / (x * math.pi)),
       grad=_sinc_grad, save=("self",), doc="sin(pi x) / (pi x), 1 at 0.")


# --- rounding and remainders -------------------------------------------------------------------------------

def _integral_identity(np_name):
    def kernel(xp, x):
        return x.copy() if x.dtype.kind != "f" else getattr(xp, np_name)(x)
    return kernel


_unary("trunc", _integral_identity("trunc"), E.trunc, grad=lambda ctx, g: (g * 0,), dtype_rule=PROMOTE,
       doc="Rounds toward zero.")


def _frac_kernel(xp, x):
    _floating_only("frac_cpu", x)
    return x - xp.trunc(x)


_unary("frac", _frac_kernel, lambda x: x - E.trunc(x), grad=lambda ctx, g: (g,), dtype_rule=PROMOTE,
       doc="x - trunc(x), the fractional part with x's sign.")


def _round_kernel(xp, x, decimals=0):
    if decimals == 0:
        return x.copy() if x.dtype.kind != "f" else xp.rint(x)
    _floating_only("round_cpu", x)
    scale = x.dtype.type(10.0 ** abs(decimals))
    return xp.rint(x * scale) / scale if decimals > 0 else xp.rint(x / scale) * scale


def _round_scalar(x, decimals):
    if isinstance(decimals, int):
        if decimals == 0:
            return E.rint(x)
        scale = 10.0 ** abs(decimals)
        return E.rint(x * scale) / scale if decimals > 0 else E.rint(x / scale) * scale
    # decimals only known at run time: its sign is chosen by select.
    scale = E.lift(10.0) ** E.abs_(E.cast(decimals, "float64"))
    return E.select(decimals >= 0, E.rint(x * scale) / scale, E.rint(x / scale) * scale)


register("round(self: Tensor, *, decimals: int = 0) -> Tensor", POINTWISE, _round_kernel, dtype_rule=PROMOTE,
         scalar=_round_scalar, grad=lambda ctx, g: (g * 0, None), inplace=True,
         doc="Rounds half to even, to `decimals` places (negative: to tens, hundreds, ...).")


def _fmod_kernel(xp, a, b):
    check_integer_divisor(a, b)
    with quiet_float_errors(xp):
        return xp.fmod(a, b)


def _fmod_grad(ctx, g):
    xp = ctx.xp
    with quiet_float_errors(xp):
        return g, -g * xp.trunc(ctx.self / ctx.other)


register("fmod(self: Tensor, other: Tensor|Scalar) -> Tensor", POINTWISE, _fmod_kernel, dtype_rule=PROMOTE,
         scalar=E.fmod, grad=_fmod_grad, save=("self", "other"), inplace=True,
         doc="The C remainder of self / other: it has self's sign.")


def _copysign_grad(ctx, g):
    xp = ctx.xp
    with quiet_float_errors(xp):
        return g * xp.where(ctx.self == 0, 0, ctx.out / ctx.self), None


_binary("copysign", lambda xp, a, b: xp.copysign(a, b), E.copysign, dtype_rule=PROMOTE_FLOAT, grad=_copysign_grad,
        save=("self", "out"), doc="|self| with other's sign.")


def _nextafter_kernel(xp, a, b):
    _floating_only("nextafter_cpu", a, b)
    return xp.nextafter(a, b)


_binary("nextafter", _nextafter_kernel, E.nextafter, doc="The next float after self toward other.", tensor_other=True)


# --- interpolation and others --------------------------------------------------------------------------------

def _lerp_kernel(xp, start, end, weight):
    # (torch compares the dtypes first, then refuses a non-floating, non-complex one)
    for name, value in (("end", end), ("weight", weight)):
        if hasattr(value, "dtype") and value.dtype != start.dtype:
            raise RuntimeError(f"expected dtype {_c_name(start.dtype)} for `{name}` but got dtype "
                               f"{_c_name(value.dtype)}")
    if start.dtype.kind not in "fc":
        _floating_only("lerp_kernel_scalar", start)
    diff = end - start
    return xp.where(xp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight)).astype(start.dtype)


def _c_name(np_dtype) -> str:
    return cpp_type_name(from_numpy_dtype(np_dtype))


register("lerp(self: Tensor, end: Tensor, weight: Tensor|Scalar) -> Tensor", POINTWISE, _lerp_kernel,
         dtype_rule=None, shape=lambda s, e, w: TensorType(s.dtype, broadcast_shapes(
             s.shape, e.shape, *([w.shape] if isinstance(w, TensorType) else [])), s.device),
         scalar=lambda s, e, w: E.select(E.abs_(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w)),
         grad=lambda ctx, g: (g * (1 - ctx.weight), g * ctx.weight, g * (ctx.end - ctx.self)),
         save=("self", "end", "weight"), inplace=True, doc="self + weight * (end - self).")


def _heaviside_kernel(xp, x, values):
    if x.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return xp.where(x == 0, values, (x > 0).astype(x.dtype)).astype(x.dtype)


register("heaviside(self: Tensor, values: Tensor) -> Tensor", POINTWISE, _heaviside_kernel, dtype_rule=None,
         shape=lambda x, v: TensorType(x.dtype, broadcast_shapes(x.shape, v.shape), x.device),
         scalar=lambda x, v: E.select(E.eq(x, 0), v, E.select(x > 0, 1, 0)), inplace=True,
         doc="0 where self < 0, values where self == 0, 1 where self > 0.")


def _square_kernel(xp, x):
    return (x.astype(xp.int64) if x.dtype == bool else x) ** 2


def _square_rule(x):
    from scriptc.types import bool_, int64
    return TensorType(int64 if x.dtype is bool_ else x.dtype, x.shape, x.device)


register("square(self: Tensor) -> Tensor", POINTWISE, _square_kernel, shape=_square_rule,
         scalar=lambda x: x * x, grad=lambda ctx, g: (2 * g * ctx.self,), save=("self",), inplace=True,
         doc="self * self (bools square to int64).")


def _float_power_grad(ctx, g):
    xp = ctx.xp
    base, exponent = ctx.self, ctx.exponent
    with quiet_float_errors(xp):
        d_base = g * exponent * xp.power(base, exponent - 1.0)
        d_exp = None if isinstance(exponent, (int, float)) else g * ctx.out * xp.where(
            base > 0, xp.log(xp.where(base > 0, base, 1)), 0)
    return d_base, d_exp


def _is_complex(value) -> bool:
    dtype = getattr(value, "dtype", None)
    return isinstance(value, complex) or (dtype is not None and getattr(dtype, "kind", None) == "c") or (
        dtype is not None and getattr(dtype, "category", None) == COMPLEX)


def _float_power_kernel(xp, base, exponent):
    wide = xp.complex128 if _is_complex(base) or _is_complex(exponent) else xp.float64
    return xp.power(xp.asarray(base, dtype=wide), xp.asarray(exponent, dtype=wide))


def _float_power_rule(base, exponent):
    tensors = [t for t in (base, exponent) if isinstance(t, TensorType)]
    wide = complex128 if _is_complex(base) or _is_complex(exponent) else float64
    return TensorType(wide, broadcast_shapes(*(t.shape for t in tensors)), tensors[0].device)


def _float_power_target(target):
    if target.dtype.kind in "fc" and target.dtype.itemsize == 8 * (1 + (target.dtype.kind == "c")):
        return
    raise RuntimeError(f"the base given to float_power_ has dtype {scalar_type_name(from_numpy_dtype(target.dtype))} "
                       f"but the operation's result requires dtype Double")


register("float_power(self: Tensor|Scalar, exponent: Tensor|Scalar) -> Tensor", POINTWISE,
         _quiet(_float_power_kernel), dtype_rule=None, shape=_float_power_rule,
         scalar=lambda a, b: E.cast(a, "float64") ** E.cast(b, "float64"),
         grad=_float_power_grad, save=("self", "exponent", "out"), inplace=True, inplace_check=_float_power_target,
         doc="self ** exponent computed in float64, or complex128 where either is complex (in place: self must "
             "be of that dtype).")


def _addcdiv_kernel(xp, x, t1, t2, value=1):
    if t1.dtype.kind in "iub" and t2.dtype.kind in "iub":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                           "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    with quiet_float_errors(xp):
        return x + value * (t1 / t2)


register("addcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor", POINTWISE,
         lambda xp, x, t1, t2, value=1: x + value * (t1 * t2), dtype_rule=PROMOTE,
         scalar=lambda x, t1, t2, value: x + value * (t1 * t2),
         grad=lambda ctx, g: (g, g * ctx.value * ctx.tensor2, g * ctx.value * ctx.tensor1, None),
         save=("tensor1", "tensor2"), inplace=True, doc="self + value * tensor1 * tensor2.")
register("addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor", POINTWISE,
         _addcdiv_kernel, dtype_rule=PROMOTE, scalar=lambda x, t1, t2, value: x + value * (t1 / t2),
         grad=lambda ctx, g: (g, g * ctx.value / ctx.tensor2, -g * ctx.value * ctx.tensor1 / (ctx.tensor2 * ctx.tensor2),
                              None),
         save=("tensor1", "tensor2"), inplace=True, doc="self + value * tensor1 / tensor2.")


# --- fmax, fmin: maximum and minimum that ignore a NaN ------------------------------------------------------------

def _nan_ignoring(pick):
    """The scalar expression of fmax/fmin: the other operand where one is NaN."""
    return lambda a, b: E.select(E.ne(a, a), b, E.select(E.ne(b, b), a, pick(a, b)))


_binary("fmax", lambda xp, a, b: xp.fmax(a, b), _nan_ignoring(E.maximum), inplace=False, save=("self", "other"),
        grad=lambda ctx, g: (g * ((ctx.self >= ctx.other) | (ctx.other != ctx.other)),
                             g * ~((ctx.self >= ctx.other) | (ctx.other != ctx.other))),
        doc="The elementwise maximum, where a NaN loses to a number.", tensor_other=True)
_binary("fmin", lambda xp, a, b: xp.fmin(a, b), _nan_ignoring(E.minimum), inplace=False, save=("self", "other"),
        grad=lambda ctx, g: (g * ((ctx.self <= ctx.other) | (ctx.other != ctx.other)),
                             g * ~((ctx.self <= ctx.other) | (ctx.other != ctx.other))),
        doc="The elementwise minimum, where a NaN loses to a number.", tensor_other=True)


# --- special functions ------------------------------------------------------------------------------------------

def _wide(x):
    """Special functions compute in float64, as their eager kernels do (the store rounds the result)."""
    return E.cast(x, "float64")


_unary("erfc", S.erfc, lambda x: S.erfc_formula(EXPR_MATH, _wide(x)),
       grad=lambda ctx, g: (-g * S.TWO_OVER_SQRT_PI * ctx.xp.exp(-ctx.self * ctx.self),), save=("self",),
       doc="1 - erf(x), accurate where erf is near 1.")
_unary("erfinv", S.erfinv, lambda x: S.erfinv_formula(EXPR_MATH, _wide(x)),
       grad=lambda ctx, g: (g * (math.sqrt(math.pi) / 2) * ctx.xp.exp(ctx.out * ctx.out),), save=("out",),
       doc="The inverse of erf on (-1, 1).")
_unary("lgamma", S.lgamma, lambda x: S.lgamma_formula(EXPR_MATH, _wide(x)),
       grad=lambda ctx, g: (g * S.digamma(ctx.xp, ctx.self),), save=("self",), doc="log |Gamma(x)|.")
_unary("digamma", S.digamma, lambda x: S.digamma_formula(EXPR_MATH, _wide(x)),
       grad=lambda ctx, g: (g * S.trigamma(ctx.xp, ctx.self),), save=("self",),
       doc="The derivative of lgamma (psi).")


def _polygamma_kernel(xp, n, x):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return S.polygamma(xp, n, x)


def _polygamma_rule(n, x):
    from scriptc.types import float32
    return TensorType(x.dtype if x.dtype is None or x.dtype.is_floating_point else float32, x.shape, x.device)


# Opaque: orders above one sum as many terms as the most negative input needs (no fixed expression).
register("polygamma(n: int, self: Tensor) -> Tensor", OPAQUE, _polygamma_kernel, shape=_polygamma_rule,
         grad=lambda ctx, g: (None, g * S.polygamma(ctx.xp, ctx.n + 1, ctx.self)), save=("self",), method=False,
         doc="The n-th derivative of digamma.")
register("polygamma.method(self: Tensor, n: int) -> Tensor", OPAQUE, lambda xp, x, n: _polygamma_kernel(xp, n, x),
         shape=lambda x, n: _polygamma_rule(n, x),
         grad=lambda ctx, g: (g * S.polygamma(ctx.xp, ctx.n + 1, ctx.self), None), save=("self",), function=False,
         inplace=True, doc="x.polygamma(n): the n-th derivative of digamma.")


# torch's other names for these ops.
for _alias, _target in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arccosh", "acosh"), ("arctanh", "atanh"), ("arctan2", "atan2"), ("fix", "trunc"),
                        ("divide", "div"), ("true_divide", "div"), ("multiply", "mul"), ("subtract", "sub"),
                        ("negative", "neg"), ("absolute", "abs"), ("clip", "clamp"),
                        ("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                        ("not_equal", "ne")):
    alias(_alias, _target)
