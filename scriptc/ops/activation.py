"""Activation functions of torch.nn beyond the core pointwise set (relu, gelu, silu, ... live in
pointwise.py): each pointwise one with its scalar expression, so it fuses and compiles, and its
gradient; the few that are not pointwise (prelu, glu, softmin, rrelu's random slopes) beside them.

The scalar expressions avoid overflow without fast-math's help: softplus and log-sigmoid use
max(x, 0) + log(1 + exp(-|x|)), and the exponential branch of elu only sees min(x, 0).
"""

from __future__ import annotations

from scriptc.types import TensorType, float32

from . import expr as E
from . import register
from .pointwise import _sigmoid
from .reduction import _softmax_grad, _softmax_kernel, _normalization_rule
from .rules import normalize_dim
from .schema import OPAQUE, POINTWISE, PROMOTE_FLOAT, RANDOM, REDUCTION

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _float_rule(x, *rest):
    """The input's shape; floating dtypes kept, integers computed in float32."""
    dtype = x.dtype if x.dtype is None or x.dtype.is_floating_point else float32
    return TensorType(dtype, x.shape, x.device)


def _activation(schema, kernel, scalar, grad, save=("self",), inplace=True, function=False, doc=""):
    return register(schema, POINTWISE, kernel, shape=_float_rule, dtype_rule=PROMOTE_FLOAT, scalar=scalar,
                    grad=grad, save=save, inplace=inplace, method=False, function=function, doc=doc)


# --- the ELU family ----------------------------------------------------------

def _elu_kernel(xp, x, alpha=1.0, scale=1.0):
    negative = alpha * xp.expm1(xp.minimum(x, 0))
    return (scale * xp.where(x > 0, x, negative)).astype(x.dtype, copy=False)


def _elu_scalar(x, alpha, scale=1.0):
    return scale * E.select(x > 0, x, alpha * (E.exp(E.minimum(x, 0)) - 1))


def _elu_derivative(xp, x, alpha, scale=1.0):
    return scale * xp.where(x > 0, 1, alpha * xp.exp(xp.minimum(x, 0)))


_activation("elu(self: Tensor, alpha: Scalar = 1.0) -> Tensor", _elu_kernel, _elu_scalar,
            lambda ctx, g: (g * _elu_derivative(ctx.xp, ctx.self, ctx.alpha), None),
            doc="x where x > 0, else alpha * (exp(x) - 1).")
_activation("selu(self: Tensor) -> Tensor", lambda xp, x: _elu_kernel(xp, x, SELU_ALPHA, SELU_SCALE),
            lambda x: _elu_scalar(x, SELU_ALPHA, SELU_SCALE),
            lambda ctx, g: (g * _elu_derivative(ctx.xp, ctx.self, SELU_ALPHA, SELU_SCALE),), function=True,
            doc="scale * elu(x, alpha) with the self-normalizing constants.")


def _celu_kernel(xp, x, alpha=1.0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0) / alpha)).astype(x.dtype, copy=False)


_activation("celu(self: Tensor, alpha: Scalar = 1.0) -> Tensor", _celu_kernel,
            lambda x, alpha: E.select(x > 0, x, alpha * (E.exp(E.minimum(x, 0) / alpha) - 1)),
            lambda ctx, g: (g * ctx.xp.where(ctx.self > 0, 1, ctx.xp.exp(ctx.xp.minimum(ctx.self, 0) / ctx.alpha)),
                            None),
            function=True, doc="max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).")


# --- piecewise-linear ones -------------------------------------------------------

def _inside(xp, x, low, high):
    """1 strictly between low and high, else 0 (where a clamp passes gradient, as torch's)."""
    return ((x > low) & (x < high)).astype(x.dtype)


def _hardtanh_kernel(xp, x, min_val=-1.0, max_val=1.0):
    return xp.minimum(xp.maximum(x, min_val), max_val).astype(x.dtype, copy=False)


_activation("hardtanh(self: Tensor, min_val: Scalar = -1.0, max_val: Scalar = 1.0) -> Tensor", _hardtanh_kernel,
            lambda x, lo, hi: E.minimum(E.maximum(x, lo), hi),
            lambda ctx, g: (g * _inside(ctx.xp, ctx.self, ctx.min_val, ctx.max_val), None, None),
            doc="x clamped to [min_val, max_val].")
_activation("relu6(self: Tensor) -> Tensor", lambda xp, x: _hardtanh_kernel(xp, x, 0.0, 6.0),
            lambda x: E.minimum(E.maximum(x, 0.0), 6.0),
            lambda ctx, g: (g * _inside(ctx.xp, ctx.self, 0.0, 6.0),), doc="min(max(0, x), 6).")
_activation("hardsigmoid(self: Tensor) -> Tensor",
            lambda xp, x: xp.minimum(xp.maximum(x / 6 + 0.5, 0.0), 1.0).astype(x.dtype, copy=False),
            lambda x: E.minimum(E.maximum(x / 6.0 + 0.5, 0.0), 1.0),
            lambda ctx, g: (g * _inside(ctx.xp, ctx.self, -3.0, 3.0) / 6,), doc="relu6(x + 3) / 6.")


def _hardswish_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    return (g * xp.where(x < -3, 0, xp.where(x <= 3, x / 3 + 0.5, 1)),)


_activation("hardswish(self: Tensor) -> Tensor",
            lambda xp, x: (x * xp.minimum(xp.maximum(x + 3, 0.0), 6.0) / 6).astype(x.dtype, copy=False),
            lambda x: x * E.minimum(E.maximum(x + 3.0, 0.0), 6.0) / 6.0, _hardswish_grad, doc="x * relu6(x + 3) / 6.")


def _threshold_kernel(xp, x, threshold, value):
    return xp.where(x > threshold, x, value).astype(x.dtype, copy=False)


_activation("threshold(self: Tensor, threshold: Scalar, value: Scalar) -> Tensor", _threshold_kernel,
            lambda x, threshold, value: E.select(x > threshold, x, value),
            lambda ctx, g: (g * (ctx.self > ctx.threshold), None, None), function=True,
            doc="x where x > threshold, else value.")


def _softshrink_kernel(xp, x, lambd=0.5):
    if lambd < 0:
        limit = "3.40282e+38" if x.dtype.itemsize == 4 else "1.79769e+308"
        raise RuntimeError(f"lambda must be in range [0, {limit}] for input dtype "
                           f"{'Float' if x.dtype.itemsize == 4 else 'Double'}, but found {lambd:g}")
    return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0)).astype(x.dtype, copy=False)


_activation("softshrink(self: Tensor, lambd: Scalar = 0.5) -> Tensor", _softshrink_kernel,
            lambda x, lambd: E.select(x > lambd, x - lambd, E.select(x < -lambd, x + lambd, 0.0)),
            lambda ctx, g: (g * (ctx.xp.abs(ctx.self) > ctx.lambd), None), inplace=False,
            doc="x - lambd above lambd, x + lambd below -lambd, else 0.")


def _hardshrink_kernel(xp, x, lambd=0.5):
    return xp.where(xp.abs(x) > lambd, x, 0).astype(x.dtype, copy=False)


register("hardshrink(self: Tensor, lambd: Scalar = 0.5) -> Tensor", POINTWISE, _hardshrink_kernel,
         shape=_float_rule, dtype_rule=PROMOTE_FLOAT, scalar=lambda x, lambd: E.select(E.abs_(x) > lambd, x, 0.0),
         grad=lambda ctx, g: (g * (ctx.xp.abs(ctx.self) > ctx.lambd), None), save=("self",),
         doc="x where |x| > lambd, else 0.")


# --- smooth ones ---------------------------------------------------------------------

def _softplus_of(xp, z):
    """log(1 + exp(z)), without overflow."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _softplus_expr(z):
    return E.maximum(z, 0.0) + E.log(1.0 + E.exp(-E.abs_(z)))


def _softplus_kernel(xp, x, beta=1.0, threshold=20.0):
    z = x * beta
    return xp.where(z > threshold, x, _softplus_of(xp, z) / beta).astype(x.dtype, copy=False)


register("softplus(self: Tensor, beta: Scalar = 1.0, threshold: Scalar = 20.0) -> Tensor", POINTWISE,
         _softplus_kernel, shape=_float_rule, dtype_rule=PROMOTE_FLOAT,
         scalar=lambda x, beta, threshold: E.select(x * beta > threshold, x, _softplus_expr(x * beta) / beta),
         grad=lambda ctx, g: (g * ctx.xp.where(ctx.self * ctx.beta > ctx.threshold, 1,
                                               _sigmoid(ctx.xp, ctx.self * ctx.beta)), None, None),
         save=("self",), method=False, doc="log(1 + exp(beta * x)) / beta; x itself above threshold.")


def _mish_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    t = xp.tanh(_softplus_of(xp, x))
    return (g * (t + x * _sigmoid(xp, x) * (1 - t * t)),)


_activation("mish(self: Tensor) -> Tensor", lambda xp, x: (x * xp.tanh(_softplus_of(xp, x))).astype(x.dtype, copy=False),
            lambda x: x * E.tanh(_softplus_expr(x)), _mish_grad, doc="x * tanh(softplus(x)).")
_activation("softsign(self: Tensor) -> Tensor", lambda xp, x: x / (1 + xp.abs(x)), lambda x: x / (1.0 + E.abs_(x)),
            lambda ctx, g: (g / (1 + ctx.xp.abs(ctx.self)) ** 2,), inplace=False, doc="x / (1 + |x|).")
_activation("tanhshrink(self: Tensor) -> Tensor", lambda xp, x: x - xp.tanh(x), lambda x: x - E.tanh(x),
            lambda ctx, g: (g * ctx.xp.tanh(ctx.self) ** 2,), inplace=False, doc="x - tanh(x).")
_activation("logsigmoid(self: Tensor) -> Tensor",
            lambda xp, x: (xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))).astype(x.dtype, copy=False),
            lambda x: E.minimum(x, 0.0) - E.log(1.0 + E.exp(-E.abs_(x))),
            lambda ctx, g: (g * _sigmoid(ctx.xp, -ctx.self),), inplace=False, doc="log(sigmoid(x)), stably.")


# --- not pointwise -----------------------------------------------------------------------

def _prelu_weight(x, weight):
    """weight shaped to broadcast over x's channel dim 1 (inputs of rank < 2 have one channel)."""
    channels = x.shape[1] if x.ndim >= 2 else 1
    if weight.size != 1 and weight.size != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.size} and channel size = {channels}.")
    if weight.size == 1:
        return weight.reshape(())
    return weight.reshape((1, -1) + (1,) * (x.ndim - 2))


def _prelu_kernel(xp, x, weight):
    return xp.where(x > 0, x, x * _prelu_weight(x, weight)).astype(x.dtype, copy=False)


def _prelu_grad(ctx, g):
    xp, x, weight = ctx.xp, ctx.self, ctx.weight
    w = _prelu_weight(x, weight)
    gx = g * xp.where(x > 0, 1, w)
    slope_part = g * xp.where(x > 0, 0, x)
    if weight.size == 1:
        gw = slope_part.sum().reshape(weight.shape)
    else:
        axes = tuple(i for i in range(x.ndim) if i != 1)
        gw = slope_part.sum(axis=axes).reshape(weight.shape)
    return gx, gw


register("prelu(self: Tensor, weight: Tensor) -> Tensor", OPAQUE, _prelu_kernel,
         shape=lambda x, w: _float_rule(x), grad=_prelu_grad, save=("self", "weight"),
         doc="x where x > 0, else weight * x, weight per channel (dim 1) or shared.")


def _glu_halves(x, dim):
    axis = normalize_dim(dim, x.ndim, "glu")
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = x.shape[axis]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size {size}")
    index = [slice(None)] * x.ndim
    first, second = list(index), list(index)
    first[axis], second[axis] = slice(0, size // 2), slice(size // 2, size)
    return x[tuple(first)], x[tuple(second)], axis


def _glu_kernel(xp, x, dim=-1):
    a, b, _ = _glu_halves(x, dim)
    return a * _sigmoid(xp, b)


def _glu_grad(ctx, g):
    xp = ctx.xp
    a, b, axis = _glu_halves(ctx.self, ctx.dim)
    s = _sigmoid(xp, b)
    return xp.concatenate([g * s, g * a * s * (1 - s)], axis=axis), None


def _glu_rule(x, dim=-1):
    if x.shape is None or not isinstance(dim, int):
        return TensorType(x.dtype, None, x.device)
    axis = normalize_dim(dim, len(x.shape), "glu")
    half = x.shape[axis] // 2 if isinstance(x.shape[axis], int) else None
    return TensorType(x.dtype, tuple(half if i == axis else d for i, d in enumerate(x.shape)), x.device)


register("glu(self: Tensor, dim: int = -1) -> Tensor", OPAQUE, _glu_kernel, shape=_glu_rule, grad=_glu_grad,
         save=("self",), method=False, doc="a * sigmoid(b) for the two halves a, b of dim.")
register("softmin(self: Tensor, dim: int, dtype: ScalarType? = None) -> Tensor", REDUCTION,
         lambda xp, x, dim, dtype=None: _softmax_kernel(xp, -x, dim, dtype), shape=_normalization_rule,
         grad=lambda ctx, g: (-_softmax_grad(ctx, g)[0], None, None), save=("out",), method=False,
         function=False, doc="softmax(-x) along dim.")


def _rrelu_kernel(xp, x, lower=1.0 / 8, upper=1.0 / 3, training=False, gen=None):
    if not training:
        slope = (lower + upper) / 2
        return xp.where(x >= 0, x, x * slope).astype(x.dtype, copy=False), None
    from .generator import generator
    slopes = generator(xp, gen).uniform(lower, upper, x.shape).astype(x.dtype)
    noise = xp.where(x > 0, xp.asarray(1, dtype=x.dtype), slopes)
    return x * noise, noise


def _rrelu_grad(ctx, g):
    if ctx.aux is None:
        slope = (ctx.lower + ctx.upper) / 2
        return g * ctx.xp.where(ctx.self >= 0, 1, slope), None, None, None, None
    return g * ctx.aux, None, None, None, None


register("rrelu(self: Tensor, lower: Scalar = 0.125, upper: Scalar = 0.3333333333333333, training: bool = False, "
         "*, generator: Generator? = None) -> Tensor", RANDOM, _rrelu_kernel, shape=lambda x, *rest: _float_rule(x),
         grad=_rrelu_grad, save=("self",), aux=True, inplace=True, method=False,
         doc="Leaky ReLU whose negative slopes are drawn from U(lower, upper) in training, their mean in eval.")
