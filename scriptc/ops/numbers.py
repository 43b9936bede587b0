"""Python numbers in scripted code: int, float, bool and complex arithmetic, comparisons, bitwise
operators and conversions, with Python's semantics (// and % floor, int ** int is a float as in
TorchScript) - what `a + b`, `abs(x)`, `divmod(a, b)` and `round(x)` lower to."""

from __future__ import annotations

import math
import operator

from scriptc.types import Bool, Complex, Float, Int, Str, TupleType

from .pyvalues import fixed, number_kind, python_op


def _real(*types):
    """The kind of a real-number result (a complex operand is another overload's)."""
    kind = number_kind(*types)
    if kind == Complex:
        raise TypeError("complex operand")
    return kind


def _real_to(result):
    """A rule: `result` for real-number operands."""
    def rule(*types):
        _real(*types)
        return result
    return rule


def _int_only(*types):
    if any(t not in (Int, Bool) for t in types):
        raise TypeError("bitwise operators take ints and bools")
    return Bool if all(t == Bool for t in types) else Int


_INTEGER_BY_ZERO = "ZeroDivisionError: integer division or modulo by zero"


def _floats(*values) -> bool:
    return any(isinstance(v, float) for v in values)


def _by_zero(a, b) -> float:
    """a / b for a zero b as C computes it (where Python raises): inf signed by a and b, nan for 0 / 0
    or a nan."""
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _true_division(a, b):
    if b != 0:
        return a / b
    if isinstance(a, complex) or isinstance(b, complex):
        zero = complex(b).real
        return complex(_by_zero(complex(a).real, zero), _by_zero(complex(a).imag, zero))
    return _by_zero(a, b)


def _floor_division(a, b):
    if b == 0:
        if not _floats(a, b):
            raise RuntimeError("division by 0")
        return _by_zero(a, b)  # (the floor of an inf is itself)
    return a // b


def _modulo(a, b):
    if b == 0:
        if not _floats(a, b):
            raise RuntimeError(_INTEGER_BY_ZERO)
        return math.nan
    return a % b


def _divmod(a, b):
    if b == 0:
        raise RuntimeError("ZeroDivisionError: float divmod()" if _floats(a, b) else _INTEGER_BY_ZERO)
    return divmod(a, b)


def scalar_power(a, b):
    """TorchScript's pow on real numbers (a ** b, math.pow): a float, C's pow where Python would raise
    (nan for a negative base to a fractional power, an inf signed as C's on overflow)."""
    if a == 0 and b < 0:
        raise RuntimeError("0.0 cannot be raised to a negative power")
    try:
        return math.pow(a, b)
    except OverflowError:
        odd_power = float(b).is_integer() and int(b) % 2 == 1
        return -math.inf if a < 0 and odd_power else math.inf
    except ValueError:
        return math.nan


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul)):
    python_op(f"{_name}.scalar(a: Scalar, b: Scalar) -> Scalar", _fn, _real)
python_op("floordiv.scalar(a: Scalar, b: Scalar) -> Scalar", _floor_division, _real,
          "a // b, rounding toward negative infinity (Python's, not C's); a float one by zero is C's inf or nan.")
python_op("mod.scalar(a: Scalar, b: Scalar) -> Scalar", _modulo, _real,
          "a % b with the sign of b (Python's); a float one by zero is nan.")
python_op("div.scalar(a: Scalar, b: Scalar) -> float", _true_division, fixed(Float),
          "a / b: a float; by zero, C's inf or nan (TorchScript's, where Python raises).")
python_op("pow.scalar(a: Scalar, b: Scalar) -> float", scalar_power, _real_to(Float),
          "a ** b: a float, as TorchScript's pow of two ints.")


def _extremum(pick):
    """min/max of two numbers: a float when either is (TorchScript's min(7, 3.14) is 7.0)."""
    def extremum(a, b):
        result = pick(a, b)
        return float(result) if isinstance(a, float) or isinstance(b, float) else result
    return extremum


python_op("min.scalar(a: Scalar, b: Scalar) -> Scalar", _extremum(min), _real)
python_op("max.scalar(a: Scalar, b: Scalar) -> Scalar", _extremum(max), _real)
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    python_op(f"{_name}.scalar(a: Scalar, b: Scalar) -> bool", _fn, _real_to(Bool))


def _compare_values(compare):
    """== / != on values that may hold tensors (two lists of tensors compare item by item, each
    tensor pair through its truth value, which only a one-element tensor has)."""
    def values_compare(a, b):
        try:
            return bool(compare(a, b))
        except ValueError:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous") from None
    return values_compare


python_op("eq.scalar(a: Any, b: Any) -> bool", _compare_values(operator.eq), fixed(Bool), "== on any two values.")
python_op("ne.scalar(a: Any, b: Any) -> bool", _compare_values(operator.ne), fixed(Bool), "!= on any two values.")
def _is(a, b) -> bool:
    """Identity for objects and tensors (never their elementwise ==), equality for values without one."""
    if a is b:
        return True
    return not hasattr(a, "__dict__") and not hasattr(a, "shape") and type(a) is type(b) and a == b


python_op("is.any(a: Any, b: Any) -> bool", _is, fixed(Bool), "`is` between values that are not None.")
python_op("neg.scalar(a: Scalar) -> Scalar", operator.neg, _real)
python_op("abs.scalar(a: Scalar) -> Scalar", abs, _real)
python_op("not.scalar(a: bool) -> bool", operator.not_, fixed(Bool))
python_op("and.scalar(a: bool, b: bool) -> bool", lambda a, b: bool(a and b), fixed(Bool),
          "Both operands already evaluated (a short-circuit `and` is a prim::If).")
python_op("or.scalar(a: bool, b: bool) -> bool", lambda a, b: bool(a or b), fixed(Bool))
python_op("int.scalar(a: Scalar) -> int", int, fixed(Int))
python_op("float.scalar(a: Scalar) -> float", float, fixed(Float))
python_op("bool.scalar(a: Scalar) -> bool", bool, fixed(Bool))

for _name, _fn in (("bitwise_and", operator.and_), ("bitwise_or", operator.or_), ("bitwise_xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)):
    python_op(f"{_name}.scalar(a: Scalar, b: Scalar) -> Scalar", _fn, _int_only)
python_op("invert.scalar(a: Scalar) -> int", operator.invert, lambda a: _int_only(a, Int))


def _divmod_type(a, b):
    kind = _real(a, b)
    return TupleType((kind, kind))


python_op("divmod.scalar(a: Scalar, b: Scalar) -> Any", _divmod, _divmod_type,
          "divmod(a, b): a tuple (a // b, a % b).")


def _round(x, ndigits=None):
    """TorchScript's round: half to even, a float for a float (also without ndigits)."""
    if isinstance(x, int):
        return x if ndigits is None else round(x, ndigits)
    return float(round(x, ndigits)) if ndigits is not None else float(round(x))


python_op("round.scalar(x: Scalar, ndigits: int? = None) -> Scalar", _round, lambda x, ndigits: _real(x))

# complex numbers
python_op("complex.scalar(real: Scalar, imag: Scalar) -> complex", complex, fixed(Complex))
for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("div", _true_division)):
    python_op(f"{_name}.complex(a: complex, b: complex) -> complex", _fn, fixed(Complex))


def _complex_power(a, b):
    try:
        return complex(a) ** b
    except ZeroDivisionError:
        return complex(math.nan, math.nan)


python_op("pow.complex(a: complex, b: complex) -> complex", _complex_power, fixed(Complex))
python_op("neg.complex(a: complex) -> complex", operator.neg, fixed(Complex))
python_op("abs.complex(a: complex) -> float", abs, fixed(Float))
python_op("bool.complex(a: complex) -> bool", bool, fixed(Bool))
python_op("real.complex(a: complex) -> float", lambda a: float(complex(a).real), fixed(Float))
python_op("imag.complex(a: complex) -> float", lambda a: float(complex(a).imag), fixed(Float))

# numbers as text and text as numbers
python_op("int.str(a: str) -> int", int, fixed(Int))
python_op("float.str(a: str) -> float", float, fixed(Float))
for _name, _fn in (("bin", bin), ("hex", hex), ("oct", oct), ("chr", chr)):
    python_op(f"{_name}.scalar(a: int) -> str", _fn, fixed(Str))
def _hash(value) -> int:
    """hash() as TorchScript's: by value, so every NaN hashes alike (Python hashes NaN by identity);
    a tensor by identity; a list or dict (in a tuple too) is unhashable, a RuntimeError."""
    if isinstance(value, float) and value != value:
        return 0
    if isinstance(value, tuple):
        return hash(tuple(_hash(v) for v in value))
    if isinstance(value, (list, dict)):
        raise RuntimeError(f"unhashable type: '{type(value).__name__}'")
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a tensor: an array, or an eager Tensor
        return id(value)
    return hash(value)


python_op("hash.any(a: Any) -> int", _hash, fixed(Int), "hash() of a number, string or tuple of them.")
python_op("range_length.int(start: int, stop: int, step: int) -> int", lambda a, b, c: len(range(a, b, c)),
          fixed(Int), "The number of items range(start, stop, step) has (a for loop's trip count).")
