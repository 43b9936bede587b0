"""The geometry native loops need of a pooling or convolution call: window sizes, strides, padding,
dilation and output sizes, worked out from the op's arguments as PyTorch defines them. Where an
argument is one PyTorch refuses (or one these loops do not take), the functions give None, and
the caller runs the op table's kernel, which raises the user's error."""

from __future__ import annotations

import numpy as np

from scriptc.ops.rules import conv_out, pair


def _ints(*values) -> bool:
    return all(type(v) is int for v in values)


def pool_geometry(shape: tuple, kernel_size, stride, padding, dilation, ceil_mode) -> list[int] | None:
    """[H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW] of a 2-D pooling of an input of `shape` (its
    last two dims the image), or None."""
    try:
        kh, kw = pair(kernel_size)
        sh, sw = pair(stride) if stride is not None and stride != [] else (kh, kw)
        ph, pw = pair(padding)
        dh, dw = pair(dilation)
    except (TypeError, IndexError):
        return None
    if not _ints(kh, kw, sh, sw, ph, pw, dh, dw) or min(kh, kw, sh, sw, dh, dw) <= 0 or min(ph, pw) < 0 or \
            2 * ph > dh * (kh - 1) + 1 or 2 * pw > dw * (kw - 1) + 1:
        return None
    h, w = shape[-2:]
    oh, ow = conv_out(h, kh, sh, ph, dh, bool(ceil_mode)), conv_out(w, kw, sw, pw, dw, bool(ceil_mode))
    if not oh or not ow or oh <= 0 or ow <= 0:
        return None
    return [h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw]


def average_divisors(geometry: list[int], dtype, count_include_pad, divisor_override) -> np.ndarray | None:
    """What each output of avg_pool2d divides by, (OH, OW): the window's elements (counting the padding
    when count_include_pad), or divisor_override; None for a divisor of zero."""
    h, w, oh, ow, kh, kw, sh, sw, ph, pw = geometry[:10]
    if divisor_override is not None:
        if divisor_override == 0:
            return None
        return np.full((oh, ow), float(divisor_override), dtype=dtype)

    def counts(size, kernel, stride, pad, out):
        starts = np.arange(out) * stride - pad
        ends = np.minimum(starts + kernel, size + pad)
        if count_include_pad:
            return ends - starts
        return np.minimum(ends, size) - np.maximum(starts, 0)
    return np.multiply.outer(counts(h, kh, sh, ph, oh), counts(w, kw, sw, pw, ow)).astype(dtype)


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
