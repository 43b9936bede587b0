"""The geometry native loops need of a pooling or convolution call: window sizes, strides, padding,
dilation and output sizes, worked out from the op's arguments as PyTorch defines them. Where an
argument is one PyTorch refuses (or one these loops do not take), the functions give None, and
the caller runs the op table's kernel, which raises the user's error."""

from __future__ import annotations

import numpy as np

from scriptc.ops.pooling import average_divisors as pooling_divisors
from scriptc.ops.pooling import window_geometry
from scriptc.ops.rules import conv_out, pair


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
    """(SH, SW, PH, PW, DH, DW, OH, OW) of a conv2d of a 4-D input, or None."""
    try:
        sh, sw = pair(stride)
        dh, dw = pair(dilation)
    except (TypeError, IndexError):
        return None
    if len(x_shape) != 4 or len(w_shape) != 4 or not _ints(sh, sw, dh, dw, groups) or min(sh, sw, dh, dw) <= 0 or \
            groups <= 0 or x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        return None
    kh, kw = w_shape[2:]
    if padding == "valid":
        ph = pw = 0
    elif padding == "same":
        if (sh, sw) != (1, 1):
            return None
        ph, pw = dh * (kh - 1) // 2, dw * (kw - 1) // 2
    else:
        try:
            ph, pw = pair(padding)
        except (TypeError, IndexError):
            return None
        if not _ints(ph, pw) or min(ph, pw) < 0:
            return None
    oh, ow = conv_out(x_shape[2], kh, sh, ph, dh), conv_out(x_shape[3], kw, sw, pw, dw)
    if not oh or not ow or oh <= 0 or ow <= 0:
        return None
    return sh, sw, ph, pw, dh, dw, oh, ow
