"""Printing tensors in PyTorch's format: precision, scientific notation, summarized edges."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scriptc.autograd import forward_ad
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.quantized import QuantizedArray, dequantized
from scriptc.tensors.conversion import _values
from scriptc.ops.meta import MetaArray
from scriptc.types import bool_, complex64, complex128, default_float, float64, int64

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor


class PrintOptions:
    """torch._tensor_str.PRINT_OPTS: how tensors print (set_printoptions changes it)."""

    def __init__(self):
        self.precision, self.threshold, self.edgeitems, self.linewidth = 4, 1000, 3, 80
        self.sci_mode: bool | None = None


PRINT_OPTS = PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print, as torch.set_printoptions: digits after the point (precision), the element
    count past which a tensor is summarized (threshold) to `edgeitems` rows/columns at each edge,
    characters per line (linewidth), a preset (profile "default", "short" or "full"; another name
    changes nothing) and scientific notation forced on/off (sci_mode; None chooses per tensor)."""
    opts = PRINT_OPTS
    if profile in _PROFILES:
        opts.precision, opts.threshold, opts.edgeitems, opts.linewidth = _PROFILES[profile]
    if precision is not None:
        opts.precision = precision
    if threshold is not None:
        opts.threshold = threshold
    if edgeitems is not None:
        opts.edgeitems = edgeitems
    if linewidth is not None:
        opts.linewidth = linewidth
    opts.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as set_printoptions takes them."""
    return dict(vars(PRINT_OPTS))


class _Formatter:
    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        lo, hi = np.abs(finite).min(), np.abs(finite).max()
        values_list = finite.tolist()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if PRINT_OPTS.sci_mode is None \
            else PRINT_OPTS.sci_mode
        precision = PRINT_OPTS.precision
        if self.sci_mode:
            width = max(len(f"{v:.{precision}e}") for v in values_list)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") + 1 for v in values_list)
        else:
            width = max(len(f"{v:.{precision}f}") for v in values_list)
        self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            text = str(value)
        return (self.max_width - len(text)) * " " + text


class _ComplexFormatter:
    """PyTorch's complex printing: real and imaginary parts each laid out by their own formatter."""

    def __init__(self, values: np.ndarray):
        self.real, self.imag = _Formatter(values.real), _Formatter(values.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, value) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _summarized(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        parts = [a[:PRINT_OPTS.edgeitems], a[-PRINT_OPTS.edgeitems:]]
    else:
        parts = [a]
    return np.concatenate([np.stack([_summarized(row) for row in p]) if p.ndim > 1 else p for p in parts])


def _format_array(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2))))
        if summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
            data = ([fmt.format(v) for v in a[:PRINT_OPTS.edgeitems].tolist()] + [" ..."]
                    + [fmt.format(v) for v in a[-PRINT_OPTS.edgeitems:].tolist()])
        else:
            data = [fmt.format(v) for v in a.tolist()]
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    if summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        rows = ([_format_array(a[i], indent + 1, summarize, fmt) for i in range(PRINT_OPTS.edgeitems)] + ["..."]
                + [_format_array(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - PRINT_OPTS.edgeitems, a.shape[0])])
    else:
        rows = [_format_array(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(a: np.ndarray, indent: int) -> str:
    """The bracketed values of an array as PyTorch prints them (for tensors and Parameters)."""
    if a.dtype == np.float16 or _bfloat16.holds(a):
        a = _values(a).astype(np.float32)
    summarize = a.size > PRINT_OPTS.threshold
    shown = _summarized(a) if summarize else a
    fmt = _ComplexFormatter(shown) if a.dtype.kind == "c" else _Formatter(shown)
    return _format_array(a, indent, summarize, fmt)


def dtype_implied(d) -> bool:
    """Whether a tensor of dtype d prints without dtype= (torch's list: the default dtype, its complex
    partner, int64, bool)."""
    return d in (default_float(), complex128 if default_float() is float64 else complex64, int64, bool_)


def _tensor_repr(t: Tensor, prefix: str = "tensor(") -> str:
    a = t._data
    indent = len(prefix)
    suffixes = []
    d = t.dtype
    if isinstance(a, QuantizedArray):
        return _with_suffixes(prefix + format_data(dequantized(a), indent), _quantized_suffixes(a), indent)
    if type(a) is MetaArray:  # (no values to show: torch prints where and what it is)
        body = "..."
        suffixes += ["device='meta'", f"size={tuple(a.shape)}"]
        if d is not default_float():
            suffixes.append(f"dtype={d!r}")
    elif a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if d is not default_float():
            suffixes.append(f"dtype={d!r}")
        body = "[]"
    else:
        if not dtype_implied(d):
            suffixes.append(f"dtype={d!r}")
        body = format_data(a, indent)
    tangent = forward_ad._tangent_of(t) if forward_ad._LEVEL[0] is not None else None
    if tangent is not None:
        suffixes.append(f"tangent={tangent!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)


def _quantized_suffixes(a: QuantizedArray) -> list[str]:
    """What torch prints after a quantized tensor's (dequantized) values."""
    from scriptc.tensors.core import wrap
    suffixes = [f"size={tuple(a.shape)}", f"dtype={a.qdtype!r}", f"quantization_scheme={a.qscheme!r}"]
    if a.scales is None:
        return suffixes + [f"scale={a.scale!r}", f"zero_point={a.zero_point!r}"]
    return suffixes + [f"scale={_tensor_repr(wrap(a.scales))}", f"zero_point={_tensor_repr(wrap(a.zero_points))}",
                       f"axis={a.axis}"]


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    last_len = len(text) - text.rfind("\n") + 1
    parts = [text]
    for s in suffixes:
        if last_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_len += len(s) + 2
    parts.append(")")
    return "".join(parts)
