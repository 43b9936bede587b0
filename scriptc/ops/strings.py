"""Strings in scripted code: str's methods, indexing, slicing, `in`, + and *, %-formatting, format(),
f-strings, str() and print() of any value (tensors printed as PyTorch prints them)."""

from __future__ import annotations

import contextlib
import contextvars
import math
import operator
import warnings

from scriptc.types import SCALAR_TYPE_NUMBERS, Bool, Int, ListType, NoneType, Str, TupleType, dtype

from .pyvalues import fixed, python_op
from .tensor_text import aten_text

STR, STRS = fixed(Str), fixed(ListType(Str))


def _index(text: str, i: int) -> str:
    if not -len(text) <= i < len(text):
        raise IndexError("string index out of range")
    return text[i]


python_op("len.str(self: str) -> int", len, fixed(Int))
python_op("getitem.str(self: str, index: int) -> str", _index, STR)
python_op("slice.str(self: str, start: int?, end: int?, step: int) -> str", lambda s, a, b, c: s[a:b:c], STR)
python_op("contains.str(self: str, sub: str) -> bool", operator.contains, fixed(Bool), "`sub in text`.")
python_op("add.str(a: str, b: str) -> str", operator.add, STR)
python_op("mul.str(self: str, times: int) -> str", operator.mul, STR)
python_op("mul.int_str(times: int, self: str) -> str", operator.mul, STR)
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    python_op(f"{_name}.str(a: str, b: str) -> bool", _fn, fixed(Bool))
python_op("list.str(self: str) -> str[]", list, STRS, "list(text): its characters.")
python_op("ord.str(self: str) -> int", ord, fixed(Int))

for _name in ("upper", "lower", "capitalize", "title", "swapcase", "casefold"):
    python_op(f"{_name}.str(self: str) -> str", getattr(str, _name), STR)
for _name in ("isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "istitle", "isdecimal",
              "isnumeric", "isidentifier", "isprintable"):
    python_op(f"{_name}.str(self: str) -> bool", getattr(str, _name), fixed(Bool))
for _name in ("strip", "lstrip", "rstrip"):
    python_op(f"{_name}.str(self: str, chars: str? = None) -> str", getattr(str, _name), STR)
for _name in ("split", "rsplit"):
    python_op(f"{_name}.str(self: str, sep: str? = None, maxsplit: int = -1) -> str[]", getattr(str, _name), STRS)
python_op("splitlines.str(self: str, keepends: bool = False) -> str[]", str.splitlines, STRS)
python_op("join.str(self: str, iterable: str[]) -> str", str.join, STR)
for _name in ("startswith", "endswith"):
    python_op(f"{_name}.str(self: str, prefix: str, start: int = 0, end: int? = None) -> bool",
              getattr(str, _name), fixed(Bool))
for _name in ("find", "rfind", "index", "rindex", "count"):
    python_op(f"{_name}.str(self: str, sub: str, start: int = 0, end: int? = None) -> int", getattr(str, _name),
              fixed(Int))
python_op("replace.str(self: str, old: str, new: str, count: int = -1) -> str", str.replace, STR)
for _name in ("center", "ljust", "rjust"):
    python_op(f"{_name}.str(self: str, width: int, fillchar: str = ' ') -> str", getattr(str, _name), STR)
python_op("zfill.str(self: str, width: int) -> str", str.zfill, STR)
python_op("expandtabs.str(self: str, tabsize: int = 8) -> str", str.expandtabs, STR)
for _name in ("partition", "rpartition"):
    python_op(f"{_name}.str(self: str, sep: str) -> Tuple[str, str, str]", getattr(str, _name),
              fixed(TupleType((Str, Str, Str))))


# --- formatting ---------------------------------------------------------------------------------

def render(value) -> str:
    """str(value) as TorchScript prints it: a float with 17 significant digits and a point
    (`2.`, `0.10000000000000001`), strings inside containers unquoted (`[a, b]`, `{k: 1.}`),
    tensors as ATen's C++ printer writes them (` 1\n 2\n[ CPULongType{2} ]`), a dtype as its
    ScalarType number (`6`: TorchScript's dtypes are ints)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, dtype):
        return str(SCALAR_TYPE_NUMBERS[value])
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, complex):
        imag = _float(value.imag)
        return f"{_float(value.real)}{'' if imag.startswith('-') else '+'}{imag}j"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        from scriptc.tensors import Tensor, wrap

        return aten_text(value if isinstance(value, Tensor) else wrap(value))
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    return str(value)


def _float(x: float) -> str:
    """A float as TorchScript's str() writes it: C's %.17g, with a point where that looks like an int;
    a negative zero as `0.` (torch prints whole numbers through an int) and a NaN with its sign
    (`-nan`), as C++'s stream does."""
    if x == 0:
        return "0."
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    text = "%.17g" % x
    if text.lstrip("-").isdigit():
        text += "."
    return text


class _Rendered:
    """A value that formats through render() unless a format spec asks for Python's formatting."""

    def __init__(self, value):
        self.value = value

    def __format__(self, spec: str) -> str:
        if spec and isinstance(self.value, (int, float, str, bool, complex)):
            return format(self.value, spec)
        return format(render(self.value), spec)

    def __str__(self) -> str:
        return render(self.value)

    def __repr__(self) -> str:
        return render(self.value)


def _python_format(template: str, values) -> str:
    return template.format(*[_Rendered(v) for v in values])


def _format(template: str, values) -> str:
    """`template.format(*values)` as TorchScript's aten::format does it: each `{}` in turn takes the
    next value as str() writes it; any other brace is text, and values left over are ignored."""
    out, start = [], 0
    for value in values:
        found = template.find("{}", start)
        if found < 0:
            break
        out += [template[start:found], render(value)]
        start = found + 2
    else:
        if template.find("{}", start) >= 0:
            raise RuntimeError(f"Too few arguments for format string: {template}")
    return "".join(out) + template[start:]


def _percent(template: str, values) -> str:
    """`template % values` as TorchScript formats it: a conversion is one letter after % (%s writes a
    value as str() does, %d %i %e %E %f %F %c as Python), no flags or widths."""
    values = list(values) if isinstance(values, tuple) else [values]
    out, position, start = [], 0, 0
    while True:
        percent = template.find("%", start)
        if percent < 0:
            break
        out.append(template[start:percent])
        if percent + 1 == len(template):
            raise RuntimeError("Incomplete format specifier")
        kind = template[percent + 1]
        start = percent + 2
        if kind == "%":
            out.append("%")
            continue
        if kind not in "sdieEfFc":
            raise RuntimeError(f"The specifier %{kind} is not supported in TorchScript format strings")
        if position == len(values):
            raise RuntimeError("Too few arguments for format string")
        out.append(_convert(kind, values[position]))
        position += 1
    if position < len(values):
        raise RuntimeError("Too many arguments for format string")
    return "".join(out) + template[start:]


def _convert(kind: str, value) -> str:
    if kind == "s":
        return render(value)
    if kind == "c":
        if isinstance(value, str) and len(value) == 1 or isinstance(value, int) and not isinstance(value, bool):
            return f"%{kind}" % value
        raise RuntimeError(f"%c requires an int or char for formatting, but got {_type_name(value)}")
    if not isinstance(value, (int, float)):
        raise RuntimeError(f"%{kind} requires a number for formatting, but got {_type_name(value)}")
    return f"%{kind}" % value


def _type_name(value) -> str:
    return "String" if isinstance(value, str) else type(value).__name__


def _warn(message) -> None:
    warnings.warn(message, UserWarning, stacklevel=2)


# The warn.at call sites that warned during the current call of a scripted function (None: no call
# open): TorchScript warns once per call site per call, whatever loops run it again.
_WARNED: contextvars.ContextVar = contextvars.ContextVar("scripted_warnings", default=None)


@contextlib.contextmanager
def one_warning_per_call():
    """The scope of one call into scripted code: each warnings.warn site in it warns at most once
    (a call made inside an open scope shares it, as torch inlines called functions)."""
    if _WARNED.get() is not None:
        yield
        return
    token = _WARNED.set(set())
    try:
        yield
    finally:
        _WARNED.reset(token)


def _warn_at(message, filename, line, column) -> None:
    shown = _WARNED.get()
    if shown is not None:
        if (filename, line, column) in shown:
            return
        shown.add((filename, line, column))
    # the scripted source's own place, shown every call (no registry), as torch reports it
    warnings.warn_explicit(message, UserWarning, filename, line, registry={})


def _print(values, sep, end) -> None:
    print(sep.join(render(v) for v in values), end=end)


python_op("str.any(value: Any) -> str", render, STR, "str(value).")
python_op("format.str(self: str, values: Any) -> str", _format, STR,
          "template.format(*values) (also f-strings) as TorchScript's: each {} takes the next value of the tuple.")
python_op("fstring.str(self: str, values: Any) -> str", _python_format, STR,
          "An f-string with conversions or format specs ({x:.2f}), formatted as Python does.")
python_op("mod.str(self: str, values: Any) -> str", _percent, STR, "`template % values` (printf-style).")
python_op("print.any(values: Any, sep: str, end: str) -> None", _print, fixed(NoneType),
          "print(*values, sep=sep, end=end).", effects=True)
python_op("warn.str(message: str) -> None", _warn, fixed(NoneType),
          "warnings.warn(message) in scripted code: a UserWarning at run time.", effects=True)
python_op("warn.at(message: str, filename: str, line: int, column: int) -> None", _warn_at, fixed(NoneType),
          "warnings.warn(message) in scripted code: a UserWarning attributed to the scripted source line, once "
          "per call of the scripted function.", effects=True)
