"""Pointwise ops: one output element from the same-index elements of the (broadcast) inputs."""

from __future__ import annotations

import math
import warnings

import numpy as np

from scriptc.types import TensorType, bfloat16, bool_, default_float, from_numpy_dtype

from . import bfloat16 as bfloat16_storage
from . import expr as E
from . import register
from .rules import broadcast_shapes, cpp_type_name, output_dtype, promote_types
from .schema import COMPARE, POINTWISE, PROMOTE, PROMOTE_FLOAT, TO_BOOL
from .factory import with_layout
from .matrix import torch_name
from .special import erf as erf_kernel
from .special import quiet_float_errors

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
INV_SQRT2 = 1.0 / math.sqrt(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _sigmoid(xp, x):
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    # 1 / (1 + exp(-x)): exp overflows to inf for x < -88 (float32), which gives the right 0; four passes
    # over memory, where a select between two branches took many more (it dominated LSTM steps).
    with quiet_float_errors(xp):
        return xp.asarray(1 / (1 + xp.exp(-x))).astype(x.dtype, copy=False)


def _unary(name, kernel, scalar, grad=None, save=(), dtype_rule=PROMOTE_FLOAT, inplace=True, doc=""):
    return register(f"{name}(self: Tensor) -> Tensor", POINTWISE, kernel, dtype_rule=dtype_rule,
                    scalar=scalar, grad=grad, save=save, inplace=inplace, doc=doc)


def _binary(name, kernel, scalar, grad=None, save=(), dtype_rule=PROMOTE, inplace=True, doc="", reflected=False,
            saved_for=None, tensor_other=False):
    """A binary pointwise op; `other` may be a Python number unless tensor_other (torch.maximum(x, 2.0) is
    refused: torch has no Scalar overload of it)."""
    self_type = "Tensor|Scalar" if reflected else "Tensor"
    other_type = "Tensor" if tensor_other else "Tensor|Scalar"
    return register(f"{name}(self: {self_type}, other: {other_type}) -> Tensor", POINTWISE, kernel,
                    dtype_rule=dtype_rule, scalar=scalar, grad=grad, save=save, saved_for=saved_for or {},
                    inplace=inplace, doc=doc)


register("add(self: Tensor, other: Tensor|Scalar, *, alpha: Scalar = 1) -> Tensor", POINTWISE,
         lambda xp, a, b, alpha=1: xp.add(a, b) if alpha == 1 else xp.add(a, xp.multiply(b, alpha)),
         dtype_rule=PROMOTE, scalar=lambda a, b, alpha: a + b * alpha,
         grad=lambda ctx, g: (g, g if ctx.alpha == 1 else g * ctx.alpha), inplace=True,
         doc="self + alpha * other, broadcasting.")


def _refuse_bool_operands(arrays) -> None:
    # a Python bool is a bool tensor to torch here
    bools = sum(isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "") == "b" for v in arrays[:2])
    if bools == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if bools:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_array(value) -> bool:
    """Whether a Tensor|Scalar argument came as a tensor (torch names the overload's Node after it)."""
    return hasattr(value, "shape")


register("sub(self: Tensor|Scalar, other: Tensor|Scalar, *, alpha: Scalar = 1) -> Tensor", POINTWISE,
         lambda xp, a, b, alpha=1: xp.subtract(a, b) if alpha == 1 else xp.subtract(a, xp.multiply(b, alpha)),
         argument_check=_refuse_bool_operands,
         dtype_rule=PROMOTE, scalar=lambda a, b, alpha: a - b * alpha,
         grad=lambda ctx, g: (g, -g if ctx.alpha == 1 else -g * ctx.alpha), inplace=True,
         grad_fn_name=lambda ctx: "SubBackward0" if _is_array(ctx.self) else "RsubBackward1",
         doc="self - alpha * other, broadcasting.")
_binary("mul", lambda xp, a, b: xp.multiply(a, b), lambda a, b: a * b,
        grad=lambda ctx, g: (g * ctx.other, g * ctx.self), save=("self", "other"),
        saved_for={"self": ("other",), "other": ("self",)})


def _integral(*values) -> bool:
    """Whether every operand is an integer or bool array or a Python int or bool."""
    for v in values:
        kind = v.dtype.kind if hasattr(v, "dtype") else ("f" if isinstance(v, float) else "i")
        if kind not in "iub":
            return False
    return True


def check_integer_divisor(a, b):
    """torch's error for an integer division by zero (floats give inf and nan)."""
    if _integral(a, b) and ((b == 0) if not hasattr(b, "dtype") else bool((b == 0).any())):
        raise RuntimeError("ZeroDivisionError")


def _div_kernel(xp, a, b, rounding_mode=None):
    if rounding_mode is None:
        if _integral(a, b):  # integers divide to the default float dtype (bfloat16 through float32)
            floating = default_float()
            np_dtype = xp.float32 if floating is bfloat16 else floating.np
            with quiet_float_errors(xp):
                quotient = xp.true_divide(xp.asarray(a, dtype=np_dtype), xp.asarray(b, dtype=np_dtype))
            return bfloat16_storage.from_values(xp, quotient) if floating is bfloat16 else quotient
        with quiet_float_errors(xp):
            return xp.true_divide(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    check_integer_divisor(a, b)
    with quiet_float_errors(xp):
        if rounding_mode == "floor":
            return xp.floor_divide(a, b)
        if _integral(a, b):
            quotient = xp.floor_divide(a, b)
            return quotient + ((quotient < 0) & (quotient * b != a))  # toward zero
        return xp.trunc(xp.true_divide(a, b))


def _div_rule(a, b, rounding_mode=None):
    """Promoted like add; without a rounding mode integers give the default float dtype."""
    tensors = [t for t in (a, b) if isinstance(t, TensorType)]
    dtype = output_dtype(PROMOTE_FLOAT if rounding_mode is None else PROMOTE, promote_types([a, b]))
    return TensorType(dtype, broadcast_shapes(*(t.shape for t in tensors)), tensors[0].device)


def _div_scalar(a, b, rounding_mode):
    q = a / b
    if rounding_mode == "floor":
        return E.floor(q)
    if rounding_mode == "trunc":
        return E.select(q < 0, E.ceil(q), E.floor(q))
    return q


register("div(self: Tensor|Scalar, other: Tensor|Scalar, *, rounding_mode: str? = None) -> Tensor", POINTWISE,
         _div_kernel, dtype_rule=PROMOTE, shape=_div_rule, scalar=_div_scalar,
         grad=lambda ctx, g: (g / ctx.other, -g * ctx.self / (ctx.other * ctx.other))
         if ctx.rounding_mode is None else (g * 0, None),
         save=("self", "other"), saved_for={"self": ("other",)}, inplace=True,
         doc="True division (ints give the default float dtype), or rounded.")
def _rounded_division(np_name):
    def kernel(xp, a, b):
        check_integer_divisor(a, b)
        with quiet_float_errors(xp):
            return getattr(xp, np_name)(a, b)
    return kernel


_binary("floor_divide", _rounded_division("floor_divide"), lambda a, b: E.floor(a / b), reflected=True)
_binary("remainder", _rounded_division("remainder"), lambda a, b: a - E.floor(a / b) * b,
        grad=lambda ctx, g: (g, -g * ctx.xp.floor_divide(ctx.self, ctx.other)), save=("self", "other"),
        reflected=True)


def _pow_grad(ctx, g):
    np = ctx.xp
    base, exponent = ctx.self, ctx.exponent
    d_base = g * exponent * np.power(base, exponent - 1)
    d_exp = None
    if not isinstance(exponent, (int, float)):
        with quiet_float_errors(np):
            d_exp = g * ctx.out * np.where(base > 0, np.log(np.where(base > 0, base, 1)), 0)
    return d_base, d_exp


def _refuse_negative_integer_power(arrays) -> None:
    base, exponent = arrays[:2]
    integral_base = getattr(getattr(base, "dtype", None), "kind", "") in ("i", "u")
    if integral_base and type(exponent) is int and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _pow_kernel(xp, a, b):
    """xp.power, but integers to negative powers as torch's: a negative exponent in a tensor gives 1
    for base 1, +-1 for base -1 by its parity, 0 otherwise (a negative Python exponent is refused
    before: _refuse_negative_integer_power). A bool tensor to a Python bool power stays bool, as in torch."""
    if isinstance(b, bool) and getattr(getattr(a, "dtype", None), "kind", None) == "b":
        return a.copy() if b else xp.ones_like(a)
    if xp.result_type(a, b).kind not in "iu":
        with quiet_float_errors(xp):  # (0 ** -1 is inf, no news)
            return xp.power(a, b)
    if not hasattr(b, "dtype"):
        return xp.power(a, b)
    negative = b < 0
    if not negative.any():
        return xp.power(a, b)
    base, exponent = xp.broadcast_arrays(xp.asarray(a, dtype=b.dtype), b)
    powers = xp.power(base, xp.where(negative, 0, exponent))
    ones = xp.where(exponent % 2 == 0, 1, -1).astype(powers.dtype)
    reciprocal = xp.where(base == 1, 1, xp.where(base == -1, ones, 0)).astype(powers.dtype)
    return xp.where(negative, reciprocal, powers)


register("pow(self: Tensor|Scalar, exponent: Tensor|Scalar) -> Tensor", POINTWISE,
         _pow_kernel, argument_check=_refuse_negative_integer_power, dtype_rule=PROMOTE, scalar=lambda a, b: a ** b,
         grad=_pow_grad, save=("self", "exponent", "out"), inplace=True,
         grad_fn_name=lambda ctx: "PowBackward2" if not _is_array(ctx.self) else
         f"PowBackward{int(_is_array(ctx.exponent))}")


def _refuse_bool_negation(arrays) -> None:
    if getattr(getattr(arrays[0], "dtype", None), "kind", "") == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


register("neg(self: Tensor) -> Tensor", POINTWISE, lambda xp, x: xp.negative(x), argument_check=_refuse_bool_negation,
         scalar=lambda x: -x, grad=lambda ctx, g: (-g,), dtype_rule=PROMOTE, inplace=True)
_unary("exp", lambda xp, x: xp.exp(x), E.exp, grad=lambda ctx, g: (g * ctx.out,), save=("out",))
_unary("log", lambda xp, x: xp.log(x), E.log, grad=lambda ctx, g: (g / ctx.self,), save=("self",))
_unary("sqrt", lambda xp, x: xp.sqrt(x), E.sqrt, grad=lambda ctx, g: (g / (2 * ctx.out),), save=("out",))
_unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda x: 1 / E.sqrt(x),
       grad=lambda ctx, g: (-0.5 * g * ctx.out ** 3,), save=("out",))
_unary("abs", lambda xp, x: xp.abs(x), E.abs_, grad=lambda ctx, g: (g * ctx.xp.sign(ctx.self),),
       save=("self",), dtype_rule=PROMOTE)
_unary("sin", lambda xp, x: xp.sin(x), E.sin, grad=lambda ctx, g: (g * ctx.xp.cos(ctx.self),),
       save=("self",))
_unary("cos", lambda xp, x: xp.cos(x), E.cos, grad=lambda ctx, g: (-g * ctx.xp.sin(ctx.self),),
       save=("self",))
_unary("tanh", lambda xp, x: xp.tanh(x), E.tanh, grad=lambda ctx, g: (g * (1 - ctx.out * ctx.out),),
       save=("out",))
_unary("sigmoid", _sigmoid, lambda x: 1 / (1 + E.exp(-x)),
       grad=lambda ctx, g: (g * ctx.out * (1 - ctx.out),), save=("out",))
_unary("erf", erf_kernel, E.erf,
       grad=lambda ctx, g: (g * TWO_OVER_SQRT_PI * ctx.xp.exp(-ctx.self * ctx.self),),
       save=("self",))
_unary("reciprocal", lambda xp, x: 1 / x, lambda x: 1 / x, grad=lambda ctx, g: (-g * ctx.out * ctx.out,),
       save=("out",))
_unary("floor", lambda xp, x: xp.floor(x), E.floor, grad=lambda ctx, g: (g * 0,), dtype_rule=PROMOTE)
_unary("ceil", lambda xp, x: xp.ceil(x), E.ceil, grad=lambda ctx, g: (g * 0,), dtype_rule=PROMOTE)
# (numpy has no sign of a bool; torch's is the tensor itself)
_unary("sign", lambda xp, x: xp.sign(x) if x.dtype != bool else x.copy(), lambda x: E.select(x > 0, 1, E.select(x < 0, -1, 0)),
       grad=lambda ctx, g: (g * 0,), dtype_rule=PROMOTE)
_unary("relu", lambda xp, x: xp.maximum(x, 0), lambda x: E.maximum(x, 0),
       grad=lambda ctx, g: (g * (ctx.out > 0),), save=("out",), dtype_rule=PROMOTE)


def _silu_grad(ctx, g):
    np = ctx.xp
    s = _sigmoid(np, ctx.self)
    return (g * s * (1 + ctx.self * (1 - s)),)


_unary("silu", lambda xp, x: x * _sigmoid(xp, x), lambda x: x / (1 + E.exp(-x)), grad=_silu_grad, save=("self",))


def _gelu_kernel(xp, x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + xp.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    if approximate != "none":
        raise RuntimeError(f"approximate argument must be either none or tanh, got '{approximate}'")
    return 0.5 * x * (1 + erf_kernel(xp, x * INV_SQRT2))


def _gelu_scalar(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + E.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1 + E.erf(x * INV_SQRT2))


def _gelu_grad(ctx, g):
    np = ctx.xp
    x = ctx.self
    if ctx.approximate == "tanh":
        inner = SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)
        t = np.tanh(inner)
        d_inner = SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner), None)
    cdf = 0.5 * (1 + erf_kernel(np, x * INV_SQRT2))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return (g * (cdf + x * pdf), None)


register("gelu(self: Tensor, approximate: str = 'none') -> Tensor", POINTWISE, _gelu_kernel,
         dtype_rule=PROMOTE_FLOAT, scalar=_gelu_scalar, grad=_gelu_grad, save=("self",), functional=True,
         doc="Gaussian error linear unit; approximate='tanh' for the tanh form.")
register("leaky_relu(self: Tensor, negative_slope: Scalar = 0.01) -> Tensor", POINTWISE,
         lambda xp, x, slope=0.01: xp.where(x > 0, x, x * slope).astype(x.dtype, copy=False),
         dtype_rule=PROMOTE, scalar=lambda x, slope: E.select(x > 0, x, x * slope),
         grad=lambda ctx, g: (g * ctx.xp.where(ctx.self > 0, 1, ctx.negative_slope)
                              .astype(g.dtype), None),
         save=("self",), inplace=True, functional=True)


def _clamp_kernel(xp, x, lo=None, hi=None):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = x
    if lo is not None:
        out = xp.maximum(out, lo)
    if hi is not None:
        out = xp.minimum(out, hi)
    return out.astype(xp.result_type(x, lo if lo is not None else hi), copy=False) if out is x else out


def _clamp_scalar(x, lo, hi):
    out = x
    if lo is not None:
        out = E.maximum(out, lo)
    if hi is not None:
        out = E.minimum(out, hi)
    return out


def _clamp_grads(g, x, lo, hi):
    """(d self, d min, d max): tensor bounds get the gradient where they are the result, as torch
    gives it (neither bound where min == max)."""
    mask = 1
    if lo is not None:
        mask = mask * (x >= lo)
    if hi is not None:
        mask = mask * (x <= hi)
    d_lo = g * ((x < lo) & (True if hi is None else lo < hi)) if hasattr(lo, "shape") else None
    d_hi = g * (x > hi) if hasattr(hi, "shape") else None
    return g * mask, d_lo, d_hi


def _clamp_grad(ctx, g):
    return _clamp_grads(g, ctx.self, ctx.min, ctx.max)


register("clamp(self: Tensor, min: Tensor|Scalar? = None, max: Tensor|Scalar? = None) -> Tensor", POINTWISE,
         _clamp_kernel, dtype_rule=PROMOTE, scalar=_clamp_scalar, grad=_clamp_grad, save=("self", "min", "max"),
         inplace=True, grad_fn_name=lambda ctx: f"ClampBackward{int(not (_is_array(ctx.min) or _is_array(ctx.max)))}",
         doc="self limited to [min, max] (scalars or broadcastable tensors).")
register("clamp_min(self: Tensor, min: Tensor|Scalar) -> Tensor", POINTWISE,
         lambda xp, x, lo: _clamp_kernel(xp, x, lo, None), dtype_rule=PROMOTE,
         scalar=lambda x, lo: E.maximum(x, lo), grad=lambda ctx, g: _clamp_grads(g, ctx.self, ctx.min, None)[:2],
         save=("self", "min"), inplace=True, doc="clamp(self, min=min).")
register("clamp_max(self: Tensor, max: Tensor|Scalar) -> Tensor", POINTWISE,
         lambda xp, x, hi: _clamp_kernel(xp, x, None, hi), dtype_rule=PROMOTE,
         scalar=lambda x, hi: E.minimum(x, hi), grad=lambda ctx, g: _clamp_grads(g, ctx.self, None, ctx.max)[::2],
         save=("self", "max"), inplace=True, doc="clamp(self, max=max).")



# (numpy dtypes, compared on every call: a dtype's .name is slow)
_CONDITION_DTYPES = frozenset({np.dtype(np.bool_), np.dtype(np.uint8)})


def _boolean_condition(index: int):
    """The argument_check of a where: torch takes a bool (or, deprecated, a uint8) condition only."""
    def check(arrays) -> None:
        dtype = getattr(arrays[index], "dtype", None)
        if dtype is not None and dtype not in _CONDITION_DTYPES:
            raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{torch_name(dtype)}")
    return check


register("where(condition: Tensor, self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", POINTWISE,
         lambda xp, c, a, b: xp.where(c, a, b), dtype_rule=PROMOTE, scalar=E.select,
         argument_check=_boolean_condition(0),
         grad=lambda ctx, g: (None, ctx.xp.where(ctx.condition, g, ctx.xp.zeros((), g.dtype)),
                              ctx.xp.where(ctx.condition, ctx.xp.zeros((), g.dtype), g)),
         save=("condition",), method=False,
         doc="Elementwise condition ? self : other, broadcasting all three.")
register("where.method(self: Tensor, condition: Tensor, other: Tensor|Scalar) -> Tensor", POINTWISE,
         lambda xp, a, c, b: xp.where(c, a, b), dtype_rule=PROMOTE, scalar=lambda a, c, b: E.select(c, a, b),
         argument_check=_boolean_condition(1),
         grad=lambda ctx, g: (g * ctx.condition, None, g * ~ctx.condition.astype(bool)),
         save=("condition",), function=False, doc="x.where(condition, y): torch.where(condition, x, y).")
def _check_boolean_mask(mask_dtype) -> None:
    if mask_dtype is not bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {cpp_type_name(mask_dtype)}")


def _masked_fill_kernel(xp, x, mask, value):
    _check_boolean_mask(from_numpy_dtype(mask.dtype))
    if getattr(value, "ndim", 0) > 0:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)


def _masked_fill_type(x: TensorType, mask: TensorType, value) -> TensorType:
    _check_boolean_mask(mask.dtype)
    return TensorType(x.dtype, broadcast_shapes(x.shape, mask.shape), x.device)


register("masked_fill(self: Tensor, mask: Tensor, value: Tensor|Scalar) -> Tensor", POINTWISE,
         _masked_fill_kernel,
         dtype_rule=None, scalar=lambda x, m, v: E.select(m, v, x),
         shape=_masked_fill_type, save=("mask",),
         # (where, not a product: a NaN gradient at a filled element stays out, as in torch)
         grad=lambda ctx, g: (ctx.xp.where(ctx.mask.astype(bool), ctx.xp.zeros((), g.dtype), g), None, None),
         inplace=True,
         doc="self with the elements where mask is True replaced by value.")
_binary("maximum", lambda xp, a, b: xp.maximum(a, b), E.maximum, inplace=False, save=("self", "other"),
        grad=lambda ctx, g: (g * (ctx.self >= ctx.other), g * (ctx.self < ctx.other)), tensor_other=True)
_binary("minimum", lambda xp, a, b: xp.minimum(a, b), E.minimum, inplace=False, save=("self", "other"),
        grad=lambda ctx, g: (g * (ctx.self <= ctx.other), g * (ctx.self > ctx.other)), tensor_other=True)
for _name, _np_name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                        ("gt", "greater"), ("ge", "greater_equal")):
    _binary(_name, (lambda f: lambda xp, a, b: getattr(xp, f)(a, b))(_np_name),
            (lambda f: lambda a, b: E.Expr(f, (E.lift(a), E.lift(b))))(_name), dtype_rule=COMPARE)
_binary("logical_and", lambda xp, a, b: xp.logical_and(a, b), E.and_, dtype_rule=TO_BOOL, tensor_other=True)
_binary("logical_or", lambda xp, a, b: xp.logical_or(a, b), E.or_, dtype_rule=TO_BOOL, tensor_other=True)
_binary("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), E.ne, dtype_rule=TO_BOOL, tensor_other=True)
_unary("logical_not", lambda xp, x: xp.logical_not(x), E.not_, dtype_rule=TO_BOOL)


def _to_dtype_rule(x, dtype):
    return TensorType(dtype, x.shape, x.device)


def _to_dtype_kernel(xp, x, dtype):
    if x.dtype.kind == "c" and not dtype.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        x = x.real
    return x.astype(dtype.np)


def _to_dtype_grad(ctx, g):
    source = ctx.self.dtype
    if source.kind not in "fc":
        return None, None
    return (g.real if g.dtype.kind == "c" and source.kind == "f" else g).astype(source), None


register("to.dtype(self: Tensor, dtype: ScalarType) -> Tensor", POINTWISE, _to_dtype_kernel, shape=_to_dtype_rule,
         scalar=lambda x, dtype: E.cast(x, dtype.name), grad=_to_dtype_grad, save=("self",), method=False,
         grad_fn_name="ToCopyBackward0",
         function=False, complex_aware=True, doc="A copy converted to dtype (a complex one loses its imaginary part).")
register("clone(self: Tensor, *, memory_format: int? = None) -> Tensor", POINTWISE, lambda xp, x, memory_format=None:
         with_layout(xp, x, memory_format), scalar=lambda x, memory_format: x, grad=lambda ctx, g: (g, None),
         doc="A copy; memory_format=scriptc.channels_last lays a 4-d copy out NHWC (preserve_format, the "
             "default, keeps self's layout).")
