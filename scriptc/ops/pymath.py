"""The math module in scripted code: math.<name> on Python numbers. As in TorchScript, a domain
error is nan (math.sqrt(-1.0)) and an overflow inf, where Python would raise."""

from __future__ import annotations

import math

from scriptc.types import Bool, Float, Int

from .pyvalues import fixed, python_op


def _total(fn):
    def call(*args):
        try:
            return fn(*args)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf
    return call


_FLOAT_OF_ONE = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "degrees", "erf", "erfc", "exp",
                 "expm1", "fabs", "gamma", "lgamma", "log10", "log1p", "log2", "radians", "sin", "sinh", "sqrt", "tan",
                 "tanh")
for _name in _FLOAT_OF_ONE:
    python_op(f"math.{_name}(a: float) -> float", _total(getattr(math, _name)), fixed(Float))
for _name in ("atan2", "copysign", "fmod", "hypot", "pow", "remainder"):
    python_op(f"math.{_name}(a: float, b: float) -> float", _total(getattr(math, _name)), fixed(Float))
for _name in ("floor", "ceil", "trunc"):
    python_op(f"math.{_name}(a: float) -> int", getattr(math, _name), fixed(Int))
for _name in ("isfinite", "isinf", "isnan"):
    python_op(f"math.{_name}(a: float) -> bool", getattr(math, _name), fixed(Bool))
python_op("math.log(a: float, base: float? = None) -> float",
          _total(lambda a, base: math.log(a) if base is None else math.log(a, base)), fixed(Float))
python_op("math.ldexp(a: float, exponent: int) -> float", _total(math.ldexp), fixed(Float))
python_op("math.factorial(a: int) -> int", math.factorial, fixed(Int))
python_op("math.gcd(a: int, b: int) -> int", math.gcd, fixed(Int))
python_op("math.isclose(a: float, b: float, rel_tol: float = 1e-09, abs_tol: float = 0.0) -> bool",
          lambda a, b, rel_tol, abs_tol: math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol), fixed(Bool))
