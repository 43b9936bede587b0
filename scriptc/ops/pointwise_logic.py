"""Bitwise ops, floating-point predicates (isnan, isinf, ...) and closeness tests (isclose, allclose, equal)."""

from __future__ import annotations

import math

from scriptc.types import Bool, TensorType, bool_, from_numpy_dtype

from . import expr as E
from . import register
from .rules import broadcast_shapes, promote_types, scalar_type_name
from .schema import COMPARE, OPAQUE, POINTWISE, PROMOTE


def _integral(x, kernel_name: str):
    """torch's NotImplementedError for a bitwise op on a dtype it does not take."""
    kind = getattr(x, "dtype", None)
    if kind is not None and kind.kind == "f":
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{scalar_type_name(from_numpy_dtype(kind))}'")
    if isinstance(x, float):
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Float'")


def _bitwise(name, kernel_name, np_name, scalar, doc):
    def kernel(xp, a, b):
        for v in (a, b):
            _integral(v, kernel_name)
        return getattr(xp, np_name)(a, b)
    register(f"{name}(self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", POINTWISE, kernel, dtype_rule=PROMOTE,
             scalar=scalar, inplace=True, doc=doc)


# On bools the logical expression is exact; integer groups are left to the eager kernels (codegen/kernel.py).
_bitwise("bitwise_and", "bitwise_and_cpu", "bitwise_and", E.and_, "Elementwise AND of integer or bool tensors (&).")
_bitwise("bitwise_or", "bitwise_or_cpu", "bitwise_or", E.or_, "Elementwise OR of integer or bool tensors (|).")
_bitwise("bitwise_xor", "bitwise_xor_cpu", "bitwise_xor", E.ne, "Elementwise XOR of integer or bool tensors (^).")


def _divisor_kernel(name: str, np_name: str):
    def kernel(xp, a, b):
        for v in (a, b):
            _integral(v, f"{name}_cpu")
        return getattr(xp, np_name)(a, b)
    return kernel


# gcd and lcm run eagerly (their loops have no scalar expression to fuse).
for _name, _np_name, _what in (("gcd", "gcd", "greatest common divisor"), ("lcm", "lcm", "least common multiple")):
    register(f"{_name}(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _divisor_kernel(_name, _np_name),
             shape=lambda a, b: TensorType(promote_types([a, b]), broadcast_shapes(a.shape, b.shape), a.device),
             inplace=True, doc=f"The elementwise {_what} of two integer tensors (non-negative; 0 with 0 gives 0).")


def _not_kernel(xp, x):
    _integral(x, "bitwise_not_cpu")
    return xp.logical_not(x) if x.dtype == bool else xp.invert(x)


register("bitwise_not(self: Tensor) -> Tensor", POINTWISE, _not_kernel, dtype_rule=PROMOTE, scalar=E.not_,
         inplace=True, doc="Elementwise NOT of an integer or bool tensor (~).")


def _shift(left: bool):
    kernel_name = "lshift_cpu" if left else "rshift_cpu"

    def kernel(xp, a, b):
        for v in (a, b):
            _integral(v, kernel_name)
            if getattr(v, "dtype", None) is not None and v.dtype.kind == "b":
                raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Bool'")
        result = xp.result_type(a, b)
        bits = result.itemsize * 8
        # As torch: a shift by a negative count or by the width or more gives 0 (or the sign, shifting right).
        outside = (b < 0) | (b >= bits)
        count = xp.where(outside, 0, b).astype(result)
        if left:
            return xp.where(outside, 0, xp.left_shift(a, count)).astype(result, copy=False)
        fill = xp.right_shift(a, bits - 1) if result.kind == "i" else 0
        return xp.where(outside, fill, xp.right_shift(a, count)).astype(result, copy=False)
    return kernel


def _shift_scalar(left: bool):
    def scalar(a, b):
        return a * 2 ** b if left else E.floor(a / 2 ** b)
    return scalar


register("bitwise_left_shift(self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", POINTWISE, _shift(True),
         dtype_rule=PROMOTE, scalar=_shift_scalar(True), inplace=True, doc="self << other for integer tensors.")
register("bitwise_right_shift(self: Tensor|Scalar, other: Tensor|Scalar) -> Tensor", POINTWISE, _shift(False),
         dtype_rule=PROMOTE, scalar=_shift_scalar(False), inplace=True,
         doc="self >> other for integer tensors (arithmetic: the sign fills in).")


# --- floating-point predicates ---------------------------------------------------------------------------

def _predicate(name, kernel, scalar, doc):
    register(f"{name}(self: Tensor) -> Tensor", POINTWISE, kernel, dtype_rule=COMPARE, scalar=scalar, doc=doc)


def _as_float(x):
    return E.cast(x, "float64")


_predicate("isnan", lambda xp, x: xp.isnan(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool),
           lambda x: E.ne(x, x), "True where self is NaN.")
_predicate("isinf", lambda xp, x: xp.isinf(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool),
           lambda x: E.eq(E.abs_(_as_float(x)), math.inf), "True where self is +inf or -inf.")
_predicate("isposinf", lambda xp, x: xp.isposinf(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool),
           lambda x: E.eq(_as_float(x), math.inf), "True where self is +inf.")
_predicate("isneginf", lambda xp, x: xp.isneginf(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool),
           lambda x: E.eq(_as_float(x), -math.inf), "True where self is -inf.")
_predicate("isfinite", lambda xp, x: xp.isfinite(x) if x.dtype.kind == "f" else xp.ones(x.shape, bool),
           lambda x: E.eq(_as_float(x) - _as_float(x), 0), "True where self is neither NaN nor infinite.")
_predicate("signbit", lambda xp, x: xp.signbit(x) if x.dtype != bool else xp.zeros(x.shape, bool),
           lambda x: E.or_(_as_float(x) < 0, E.and_(E.eq(_as_float(x), 0), 1 / _as_float(x) < 0)),
           "True where self's sign bit is set (-0.0 included).")


def _nan_to_num_kernel(xp, x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind != "f":
        return x.copy()
    info = xp.finfo(x.dtype)
    return xp.nan_to_num(x, nan=nan, posinf=info.max if posinf is None else posinf,
                         neginf=info.min if neginf is None else neginf)


# Opaque: its default replacements are the dtype's largest values, which a scalar expression cannot name.
register("nan_to_num(self: Tensor, nan: float? = 0.0, posinf: float? = None, neginf: float? = None) -> Tensor",
         OPAQUE, _nan_to_num_kernel, shape=lambda x, *rest: x,
         grad=lambda ctx, g: (g * ctx.xp.isfinite(ctx.self), None, None, None), save=("self",), inplace=True,
         doc="NaN, +inf and -inf replaced (by 0 and the dtype's largest and smallest values by default).")


# --- closeness ----------------------------------------------------------------------------------------------

def _check_tolerances(rtol, atol):
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")


def _isclose_kernel(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{scalar_type_name(from_numpy_dtype(a.dtype))} did not match "
                           f"{scalar_type_name(from_numpy_dtype(b.dtype))}")
    _check_tolerances(rtol, atol)
    close = a == b
    if a.dtype == bool:
        return close
    if equal_nan and a.dtype.kind == "f":
        close = close | (xp.isnan(a) & xp.isnan(b))
    if rtol == 0 and atol == 0:
        return close
    fa, fb = (a, b) if a.dtype.kind == "f" else (a.astype(xp.float32), b.astype(xp.float32))
    with _quiet(xp):
        error = xp.abs(fa - fb)
        return close | (xp.isfinite(error) & (error <= atol + xp.abs(rtol * fb)))


def _quiet(xp):
    from .special import quiet_float_errors
    return quiet_float_errors(xp)


def _isclose_rule(a, b, *rest):
    if a.dtype is not None and b.dtype is not None and a.dtype is not b.dtype:
        raise RuntimeError(f"{scalar_type_name(a.dtype)} did not match {scalar_type_name(b.dtype)}")
    return TensorType(bool_, broadcast_shapes(a.shape, b.shape), a.device)


# Opaque, not pointwise: the inputs must keep their dtypes (torch refuses two different ones), while
# fused pointwise code computes in one promoted dtype.
register("isclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) "
         "-> Tensor", OPAQUE, _isclose_kernel, shape=_isclose_rule,
         doc="|self - other| <= atol + rtol * |other|, elementwise (NaNs equal with equal_nan).")


def _allclose_kernel(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_isclose_kernel(xp, a, b, rtol, atol, equal_nan).all())


register("allclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) "
         "-> bool", OPAQUE, _allclose_kernel, shape=lambda *args: Bool,
         doc="Whether isclose holds everywhere (a Python bool).")


def _equal_kernel(xp, a, b):
    return a.shape == b.shape and bool((a == b).all())


register("equal(self: Tensor, other: Tensor) -> bool", OPAQUE, _equal_kernel, shape=lambda a, b: Bool,
         doc="Whether both tensors have the same shape and elements (a Python bool).")
