"""The math module in scripted code: math.<name> on Python numbers. As in TorchScript, which calls
C's libm, a domain error or an overflow gives C's value where Python would raise: math.log(0.0) is
-inf, math.sqrt(-1.0) nan, math.sinh(-1000.0) -inf, math.gamma(0.0) inf."""

from __future__ import annotations

import math

from scriptc.types import Bool, Float, Int, TupleType

from .numbers import scalar_power
from .pyvalues import fixed, python_op


def _log_at(pole: float):
    """A logarithm's C value off its domain: -inf at its pole, nan below it."""
    return lambda x: -math.inf if x == pole else math.nan


def _gamma_at_pole_or_overflow(x):
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and (math.isinf(x) or x == math.floor(x)):
        return math.nan
    return math.inf


# C's value where Python's math raises and the value is not simply nan (a domain error) or inf (an
# overflow): a pole's infinity, an overflow's sign
_C_VALUE = {
    "log": _log_at(0.0), "log10": _log_at(0.0), "log2": _log_at(0.0), "log1p": _log_at(-1.0),
    "atanh": lambda x: math.copysign(math.inf, x) if abs(x) == 1 else math.nan,
    "sinh": lambda x: math.copysign(math.inf, x), "ldexp": lambda a, exponent: math.copysign(math.inf, a),
    "gamma": _gamma_at_pole_or_overflow, "lgamma": lambda x: math.inf,
}


def _like_c(name: str):
    """math.<name>, with C's value where Python raises a ValueError or OverflowError."""
    python_fn, c_fn = getattr(math, name), _C_VALUE.get(name)

    def call(*args):
        try:
            return python_fn(*args)
        except ValueError:
            return c_fn(*args) if c_fn is not None else math.nan
        except OverflowError:
            return c_fn(*args) if c_fn is not None else math.inf
    return call


def _divide_like_c(a: float, b: float) -> float:
    if b != 0:
        return a / b
    return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)


def _log(a, base=None):
    """math.log(a[, base]): log(a) / log(base), each C's value where Python raises (as TorchScript)."""
    log = _like_c("log")
    return log(a) if base is None else _divide_like_c(log(a), log(base))


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
