"""The math module in scripted code: math.<name> on Python numbers. As in TorchScript, which calls
C's libm, a domain error or an overflow gives C's value where Python would raise: math.log(0.0) is
-inf, math.sqrt(-1.0) nan, math.sinh(-1000.0) -inf, math.gamma(0.0) inf."""

from __future__ import annotations

import math

import numpy as np

from scriptc.types import Bool, Float, Int, TupleType

from .numbers import scalar_power
from .pyvalues import fixed, python_op


def _gamma_at_pole_or_overflow(x):
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and (math.isinf(x) or x == math.floor(x)):
        return math.nan
    return math.inf


# C's answer where Python's math raises: numpy's ufuncs follow C99 on float64
_C_VALUE = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh,
    "exp": np.exp, "expm1": np.expm1, "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "sin": np.sin,
    "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "fmod": np.fmod, "hypot": np.hypot,
    "ldexp": lambda a, exponent: np.ldexp(a, np.int64(exponent)),
    "gamma": _gamma_at_pole_or_overflow, "lgamma": lambda x: math.inf, "remainder": lambda a, b: math.nan,
}


def _like_c(name: str):
    """math.<name>, with C's value where Python raises a ValueError or OverflowError."""
    python_fn, c_fn = getattr(math, name), _C_VALUE.get(name)

    def call(*args):
        try:
            return python_fn(*args)
        except (ValueError, OverflowError):
            if c_fn is None:
                raise
            with np.errstate(all="ignore"):
                return float(c_fn(*(np.float64(a) for a in args)))
    return call


def _log(a, base=None):
    try:
        return math.log(a) if base is None else math.log(a, base)
    except (ValueError, OverflowError, ZeroDivisionError):
        with np.errstate(all="ignore"):
            value = np.log(np.float64(a))
            return float(value if base is None else value / np.log(np.float64(base)))


_FLOAT_OF_ONE = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "degrees", "erf", "erfc", "exp",
                 "expm1", "fabs", "gamma", "lgamma", "log10", "log1p", "log2", "radians", "sin", "sinh", "sqrt", "tan",
                 "tanh")
for _name in _FLOAT_OF_ONE:
    python_op(f"math.{_name}(a: float) -> float", _like_c(_name), fixed(Float))
for _name in ("atan2", "copysign", "fmod", "hypot", "remainder"):
    python_op(f"math.{_name}(a: float, b: float) -> float", _like_c(_name), fixed(Float))
for _name in ("floor", "ceil", "trunc"):
    python_op(f"math.{_name}(a: float) -> int", getattr(math, _name), fixed(Int))
for _name in ("isfinite", "isinf", "isnan"):
    python_op(f"math.{_name}(a: float) -> bool", getattr(math, _name), fixed(Bool))
python_op("math.pow(a: float, b: float) -> float", scalar_power, fixed(Float))
python_op("math.log(a: float, base: float? = None) -> float", _log, fixed(Float))
python_op("math.ldexp(a: float, exponent: int) -> float", _like_c("ldexp"), fixed(Float))
python_op("math.modf(a: float) -> Tuple[float, float]", lambda a: math.modf(float(a)),
          fixed(TupleType((Float, Float))), "(fractional part, integral part), both with a's sign.")
python_op("math.frexp(a: float) -> Tuple[float, int]", lambda a: math.frexp(float(a)),
          fixed(TupleType((Float, Int))), "(mantissa, exponent) with a == mantissa * 2 ** exponent.")
python_op("math.factorial(a: int) -> int", math.factorial, fixed(Int))
python_op("math.gcd(a: int, b: int) -> int", math.gcd, fixed(Int))
python_op("math.isclose(a: float, b: float, rel_tol: float = 1e-09, abs_tol: float = 0.0) -> bool",
          lambda a, b, rel_tol, abs_tol: math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol), fixed(Bool))
