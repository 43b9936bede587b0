"""The geometry native loops need of a pooling or convolution call: window sizes, strides, padding,
dilation and output sizes, worked out from the op's arguments as PyTorch defines them. Where an
argument is one PyTorch refuses (or one these loops do not take), the functions give None, and
the caller runs the op table's kernel, which raises the user's error."""

from __future__ import annotations

import numpy as np

from scriptc.ops.conv import same_padding
from scriptc.ops.linalg import _conv_params
from scriptc.ops.pooling import average_divisors as pooling_divisors
from scriptc.ops.pooling import window_geometry


def _ints(*values) -> bool:
    return all(type(v) is int for v in values)


def _probe(shape: tuple, dtype=np.float64) -> np.ndarray:
    """An array of `shape` that owns no memory: what the op table's checks read (shape, dtype)."""
    return np.broadcast_to(np.zeros((), dtype=dtype), tuple(shape))


def _window(shape: tuple, kernel_size, stride, padding, dilation, ceil_mode):
    """The op table's 2-D pooling window of an input of `shape`, or None where it refuses the arguments."""
    try:
        return window_geometry(_probe(shape[-3:]), kernel_size, stride, padding, dilation, bool(ceil_mode), 2,
                               "max_pool2d")
    except (RuntimeError, TypeError, ValueError, IndexError):
        return None


def pool_geometry(shape: tuple, kernel_size, stride, padding, dilation, ceil_mode) -> list[int] | None:
    """[H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW] of a 2-D pooling of an input of `shape` (its
    last two dims the image), or None."""
    window = _window(shape, kernel_size, stride, padding, dilation, ceil_mode)
    if window is None or len(shape) < 3:
        return None
    kernel, stride, padding, dilation, out, _ = window
    if not _ints(*kernel, *stride, *padding, *dilation) or min(stride) <= 0 or min(padding) < 0:
        return None
    return [shape[-2], shape[-1], *out, *kernel, *stride, *padding, *dilation]


def average_divisors(geometry: list[int], dtype, count_include_pad, divisor_override) -> np.ndarray | None:
    """What each output of avg_pool2d divides by, (OH, OW), as the op table's kernel works it out; None
    for a divisor of zero."""
    h, w, oh, ow, kh, kw, sh, sw, ph, pw = geometry[:10]
    try:
        divisors = pooling_divisors(np, (h, w), (kh, kw), (sh, sw), (ph, pw), (oh, ow), count_include_pad,
                                    divisor_override)
    except RuntimeError:
        return None
    return np.ascontiguousarray(divisors, dtype=dtype)


def conv_geometry(x_shape: tuple, w_shape: tuple, stride, padding, dilation, groups) -> tuple | None:
    """(SH, SW, PH, PW, DH, DW, OH, OW) of a conv2d of a 4-D input, as the op table's conv2d works it
    out; None where it refuses the arguments, or where padding='same' pads one side more than the
    other (an even reach: the op pads the input first, which these loops do not)."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        return None
    try:
        geometry = _conv_params(_probe(x_shape), _probe(w_shape), stride, padding, dilation, groups)
        if padding == "same" and any(before != after for before, after in same_padding(w_shape[2:], geometry[4:6])):
            return None
    except (RuntimeError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    if not _ints(*geometry, groups) or min(sh, sw, dh, dw, groups) <= 0 or min(ph, pw) < 0:
        return None
    return geometry
