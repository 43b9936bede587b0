"""A tensor as TorchScript's str(), print() and str.format() write it: ATen's C++ printer (a column of
values, or matrices under `(1,.,.) = ` headers, in one number format per matrix, then the type and
sizes: `[ CPUFloatType{2,3} ]`), not the Python repr eager code prints."""

from __future__ import annotations

import itertools
import math

# the C++ type names ATen prints (DeprecatedTypeProperties::toString), by dtype name
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
               "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}

LINE_SIZE = 80


def aten_text(tensor) -> str:
    """`tensor` (a scriptc Tensor) as ATen prints it; a dtype ATen's printer does not convert to
    double (complex, quantized) as Python prints it."""
    from scriptc.types import float64

    name = _TYPE_NAMES.get(str(tensor.dtype).rsplit(".", 1)[-1])
    if name is None:
        return repr(tensor)
    values = tensor.detach().to(float64).tolist()  # (host values: the printer reads every one)
    shape = tuple(tensor.shape)
    kind = f"CPU{name}Type"
    if not shape:
        return f"{_number(values, '%.17g')}\n[ {kind}{{}} ]"
    text = ""
    if all(shape):
        if len(shape) == 1:
            scale, width, spec = _number_format(values)
            text = (f"{_number(scale, '%g')} *\n" if scale != 1 else "") + "".join(
                f"{_number(v / scale, spec):>{width}}\n" for v in values)
        elif len(shape) == 2:
            text = _matrix(values, 0)
        else:
            text = "\n".join(_block(values, index) for index in _leading_indices(shape[:-2]))
    return f"{text}[ {kind}{{{','.join(str(n) for n in shape)}}} ]"


def _leading_indices(sizes: tuple) -> list:
    """Positions over the leading dims in ATen's order: the first dim fastest."""
    return [tuple(reversed(index)) for index in itertools.product(*[range(n) for n in reversed(sizes)])]


def _block(values: list, index: tuple) -> str:
    header = "(" + "".join(f"{i + 1}," for i in index) + ".,.) = \n"
    for i in index:
        values = values[i]
    return header + _matrix(values, 1)


def _number(x: float, spec: str) -> str:
    if math.isnan(x):  # (C++'s stream writes a NaN's sign)
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return spec % x


def _exponent(x: float) -> float:
    return math.floor(math.log10(x)) + 1 if x != 0 else 1


def _flat(values) -> list:
    return [x for v in values for x in _flat(v)] if isinstance(values, list) else [values]


def _number_format(values: list) -> tuple[float, int, str]:
    """(scale, column width, printf spec) ATen picks for a block of values: whole numbers as %g,
    otherwise four decimals, under a power-of-ten scale or in scientific notation where the
    magnitudes differ too much for one fixed-point width."""
    finite = [v for v in _flat(values) if math.isfinite(v)]
    whole = all(v == math.ceil(v) for v in finite)
    if not finite:
        low = high = 1.0
    else:
        magnitudes = [abs(v) for v in finite]
        low, high = _exponent(min(magnitudes)), _exponent(max(magnitudes))
    if whole:
        return (1.0, 11, "%.4e") if high > 9 else (1.0, int(high) + 1, "%g")
    if high - low > 4:
        return 1.0, 12 if abs(high) > 99 or abs(low) > 99 else 11, "%.4e"
    if high > 5 or high < 0:
        return 10.0 ** (high - 1), 7, "%.4f"
    return 1.0, 7 if high == 0 else int(high) + 6, "%.4f"


def _matrix(values: list, indent: int) -> str:
    """A matrix as ATen's __printMatrix writes it: rows of columns, split into `Columns a to b`
    groups where a row would pass the line size."""
    scale, width, spec = _number_format(values)
    rows, columns = len(values), len(values[0])
    per_line = max((LINE_SIZE - indent) // (width + 1), 1)
    pad = " " * indent
    out = []
    for first in range(0, columns, per_line):
        last = min(first + per_line, columns) - 1
        if per_line < columns:
            out.append(("\n" if first else "") + f"Columns {first + 1} to {last + 1}{pad}")
        if scale != 1:
            out.append(f"{_number(scale, '%g')} *\n{pad}")
        for r in range(rows):
            out.append(" ".join(f"{_number(v / scale, spec):>{width}}" for v in values[r][first:last + 1]))
            out.append("\n")
            if r != rows - 1:
                out.append(pad + (" " if scale != 1 else ""))
    return "".join(out)
