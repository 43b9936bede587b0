"""Native kernels for opaque ops the executor runs outside fusion groups: pooling (pool.py).

`native_kernel(op)` is the kernel to run `op` with: the op table's, unless this module has a faster
one, which takes the same arguments, makes the same checks (the op table's own helpers) and gives
the same results - for float32 and float64 numpy arrays in 4-D (or 3-D, unbatched); anything else
goes to the op table's kernel.
"""

from __future__ import annotations

import ctypes

import numpy as np

from scriptc.ops import OpDef
from scriptc.ops.pooling import average_divisors as _average_divisors
from scriptc.ops.pooling import window_geometry

from . import pool
from .loops import loop_function
from .pointers import data_pointer

_DTYPES = {np.dtype(name): name for name in pool.FUNCTIONS}


def _probe(x_shape: tuple, dtype) -> np.ndarray:
    """An array of x's last three dims that owns no memory: what the op table's checks read (shape, dtype)."""
    return np.broadcast_to(np.zeros((), dtype=dtype), tuple(x_shape[-3:]))


def pool_geometry(x_shape: tuple, kernel_size, stride, padding, dilation, ceil_mode, name: str) -> list[int]:
    """The pool loop's meta words but the mode, [H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW], with
    the op table's checks (its errors for bad arguments)."""
    kernel, stride, padding, dilation, out, _ = window_geometry(_probe(x_shape, np.float64), kernel_size, stride,
                                                                padding, dilation, ceil_mode, 2, name)
    return [x_shape[-2], x_shape[-1], *out, *kernel, *stride, *padding, *dilation]


def average_divisors(x_shape: tuple, dtype, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override) -> np.ndarray:
    """What each output of avg_pool2d divides by, (OH, OW), as the op table's kernel works it out."""
    kernel, stride, padding, _, out, _ = window_geometry(_probe(x_shape, dtype), kernel_size, stride, padding, 1,
                                                         ceil_mode, 2, "avg_pool2d")
    divisors = _average_divisors(np, x_shape, kernel, stride, padding, out, count_include_pad, divisor_override)
    return np.ascontiguousarray(divisors, dtype=dtype)


def _run_pool(x: np.ndarray, geometry: list[int], mode: int, divisors: np.ndarray | None) -> np.ndarray:
    batched = x.ndim == 4
    x4 = np.ascontiguousarray(x if batched else x[None])
    n, c = x4.shape[:2]
    out = np.empty((n, c, geometry[2], geometry[3]), dtype=x.dtype)
    ptrs = (ctypes.c_void_p * 3)(data_pointer(x4), data_pointer(out),
                                 data_pointer(divisors) if divisors is not None else None)
    meta = (ctypes.c_int64 * 13)(*geometry, mode)
    function = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
        loop_function("pool", _DTYPES[x.dtype]))
    function(0, n * c, ptrs, meta)
    return out if batched else out[0]


def _pooled(x) -> bool:
    return type(x) is np.ndarray and x.ndim in (3, 4) and x.dtype in _DTYPES


def _max_pool2d(op: OpDef):
    def kernel(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        if xp is not np or not _pooled(x):
            return op.kernel(xp, x, kernel_size, stride, padding, dilation, ceil_mode)
        geometry = pool_geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
        return _run_pool(x, geometry, pool.MAX, None), None  # (no indices: a plan computes no gradient)
    return kernel


def _avg_pool2d(op: OpDef):
    def kernel(xp, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
        if xp is not np or not _pooled(x):
            return op.kernel(xp, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        geometry = pool_geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
        divisors = average_divisors(x.shape, x.dtype, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                    divisor_override)
        return _run_pool(x, geometry, pool.AVERAGE, divisors)
    return kernel


# The op table's ops this backend runs natively, by name: the native implementation of each.
KERNELS = {"max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d}


def native_kernel(op: OpDef):
    """The kernel the executor runs `op` with (the op table's when there is no native one)."""
    make = KERNELS.get(op.name)
    return make(op) if make is not None else op.kernel
