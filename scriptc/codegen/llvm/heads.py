"""Native parts of the executor's library-backed heads (ops whose kernel is numpy plus BLAS).

`head_kernel(op)` is the kernel a fused group's head runs: the op table's own, except where this
backend has a faster piece for it - conv2d's im2col (im2col.py) is compiled, its GEMM stays BLAS.
Same arguments, checks, errors and results as the op table's kernel; eager code keeps the op
table's numpy kernel.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from scriptc.ops import OpDef

from .driver import KERNEL_TYPE, im2col_function
from .im2col import FUNCTIONS, conv2d_meta


def head_kernel(op: OpDef, split=None, dtype: str | None = None):
    """The kernel to run `op` with as a fused group's head; `split(loop, n, ptrs, meta)` runs a
    compiled loop's [0, n) on the caller's threads (the runtime pool's split); `dtype`, the dtype
    name the group's guard expects of the head's first input, has its loop compiled (or read from
    the disk cache) now, with the plan, rather than at a first call."""
    if op.name == "conv2d":
        if dtype in FUNCTIONS:
            _im2col_loop(dtype)
        return functools.partial(op.kernel, im2col=functools.partial(native_im2col, split=split))
    return op.kernel


@dataclass(frozen=True)
class _Loop:
    """A compiled loop as the pool splits it."""
    function: object
    address: int


@functools.cache
def _im2col_loop(dtype: str) -> _Loop:
    address = im2col_function(dtype)
    return _Loop(KERNEL_TYPE(address), address)


def native_im2col(xp, x, w, sh, sw, ph, pw, dh, dw, oh, ow, groups, split=None):
    """The columns the op table's im2col makes, (N, G, C/G*KH*KW, OH*OW), from the compiled loop (its
    rows, one per image and channel, split by `split` when given); None where it has no loop (another
    array module or dtype), for the op table's to make."""
    if xp is not np or type(x) is not np.ndarray or x.dtype.name not in FUNCTIONS:
        return None
    loop = _im2col_loop(x.dtype.name)
    x = np.ascontiguousarray(x)
    n, c, h, width = x.shape
    kh, kw = w.shape[2:]
    cols = np.empty((n, groups, (c // groups) * kh * kw, oh * ow), dtype=x.dtype)
    meta = conv2d_meta(h, width, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw)
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, cols.ctypes.data)
    words = (ctypes.c_int64 * len(meta))(*meta)
    if split is not None:
        split(loop, n * c, ptrs, words)
    else:
        loop.function(0, n * c, ptrs, words)
    return cols
