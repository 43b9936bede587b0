"""Native kernels for opaque ops the executor runs outside fusion groups: pooling (pool.py, blocked_pool.py).

`native_kernel(op)` is the kernel to run `op` with: the op table's, unless this module has a faster
one, which takes the same arguments and gives the same results - for float32 and float64 numpy
arrays in 4-D (or 3-D, unbatched) and arguments PyTorch takes; anything else (arguments it refuses
included: the op table's kernel raises the user's error) goes to the op table's kernel.
"""

from __future__ import annotations

import ctypes

import numpy as np

from scriptc.ops import OpDef

from . import blocked_depthwise, blocked_pool, pool, windows
from .geometry import average_divisors, pool_geometry
from .loops import loop_function
from .pointers import data_pointer

_DTYPES = {np.dtype(name): name for name in pool.FUNCTIONS}


def _run_pool(x: np.ndarray, geometry: list[int], mode: int, divisors: np.ndarray | None) -> np.ndarray:
    batched = x.ndim == 4
    x4 = np.ascontiguousarray(x if batched else x[None])
    n, c = x4.shape[:2]
    out = np.empty((n, c, geometry[2], geometry[3]), dtype=x.dtype)
    function = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
    if mode == pool.MAX and blocked_pool.takes(geometry):  # by blocks of channels (blocked_pool.py)
        ptrs = (ctypes.c_void_p * 2)(data_pointer(x4), data_pointer(out))
        meta = (ctypes.c_int64 * 13)(c, *geometry)
        lanes = blocked_depthwise.lanes(_DTYPES[x.dtype])
        function(loop_function("blocked_pool", _DTYPES[x.dtype]))(0, n * -(-c // lanes), ptrs, meta)
        return out if batched else out[0]
    rows, columns = windows.positions(geometry[2], geometry[3], _DTYPES[x.dtype])
    ptrs = (ctypes.c_void_p * 5)(data_pointer(x4), data_pointer(out),
                                 data_pointer(divisors) if divisors is not None else None, data_pointer(rows),
                                 data_pointer(columns))
    meta = (ctypes.c_int64 * 13)(*geometry, mode)
    function(loop_function("pool", _DTYPES[x.dtype]))(0, n * c, ptrs, meta)
    return out if batched else out[0]


def _pooled(x) -> bool:
    return type(x) is np.ndarray and x.ndim in (3, 4) and x.dtype in _DTYPES


def _max_pool2d(op: OpDef):
    def kernel(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        geometry = pool_geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode) if xp is np and \
            _pooled(x) else None
        if geometry is None:
            return op.kernel(xp, x, kernel_size, stride, padding, dilation, ceil_mode)
        return _run_pool(x, geometry, pool.MAX, None), None  # (no indices: a plan computes no gradient)
    return kernel


def _avg_pool2d(op: OpDef):
    def kernel(xp, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
        geometry = pool_geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode) if xp is np and \
            _pooled(x) else None
        divisors = None if geometry is None else average_divisors(geometry, x.dtype, count_include_pad,
                                                                    divisor_override)
        if divisors is None:
            return op.kernel(xp, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return _run_pool(x, geometry, pool.AVERAGE, divisors)
    return kernel


# The op table's ops this backend runs natively, by name: the native implementation of each.
KERNELS = {"max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d}


def native_kernel(op: OpDef):
    """The kernel the executor runs `op` with (the op table's when there is no native one)."""
    make = KERNELS.get(op.name)
    return make(op) if make is not None else op.kernel
