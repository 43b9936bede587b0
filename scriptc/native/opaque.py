"""Native kernels for opaque ops the executor runs outside fusion groups: pooling (pool.py, blocked_pool.py),
the dynamically quantized linear's integer product (linear.py's packed product).

`native_kernel(op)` is the kernel to run `op` with: the op table's, unless this module has a faster
one, which takes the same arguments and gives the same results - for float32 and float64 numpy
arrays in 4-D (or 3-D, unbatched) and arguments PyTorch takes; anything else (arguments it refuses
included: the op table's kernel raises the user's error) goes to the op table's kernel.
"""

from __future__ import annotations

import ctypes
import functools
import weakref

import numpy as np

from scriptc.ops import OpDef
from scriptc.ops import quantized

from . import blocked_depthwise, blocked_pool, linear, pool, windows
from .geometry import average_divisors, pool_geometry
from .heads import gemm_runs
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


# id(a quantized weight's float32 operand) -> (weak reference to it, its panels, zero bias, floor): the
# packed product's constants, kept while the operand (ops/quantized.py's cache) lives.
_QUANTIZED_PANELS: dict = {}


def _integer_product(activations: np.ndarray, operand: np.ndarray) -> np.ndarray:
    """activations @ operand by the packed product: exact, as every sum of these integers is exact in
    float32 (ops/quantized.py picks float32 operands only then), at the loop's rate rather than
    OpenBLAS's."""
    if operand.dtype != np.float32 or activations.shape[0] == 0:
        return activations @ operand
    entry = _QUANTIZED_PANELS.get(id(operand))
    if entry is None or entry[0]() is not operand:
        key = id(operand)
        entry = (weakref.ref(operand, lambda _: _QUANTIZED_PANELS.pop(key, None)), linear.pack(operand),
                 linear.pack_bias(None, operand.shape[1], operand.dtype), np.zeros(1, np.float32))
        _QUANTIZED_PANELS[key] = entry
    _, panels, bias, floor = entry
    rows, columns = activations.shape[0], operand.shape[1]
    out = np.empty((rows, columns), np.float32)
    ptrs = (ctypes.c_void_p * 5)(data_pointer(activations), data_pointer(panels), data_pointer(out),
                                 data_pointer(bias), data_pointer(floor))
    meta = (ctypes.c_int64 * 4)(rows, operand.shape[0], columns, 0)
    _float32_linear_loop()(0, linear.panels(columns, operand.dtype), ptrs, meta)
    return out


@functools.cache
def _float32_linear_loop():
    function = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
    return function(loop_function("linear", "float32"))


def _quantized_linear_dynamic(op: OpDef):
    def kernel(xp, x, weight, weight_scales, weight_zero_points, bias=None, reduce_range=True):
        product = _integer_product if xp is np and gemm_runs() else quantized._matmul
        return quantized.linear_dynamic(xp, x, weight, weight_scales, weight_zero_points, bias, reduce_range, product)
    return kernel


# The op table's ops this backend runs natively, by name: the native implementation of each.
KERNELS = {"max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d, "quantized_linear_dynamic": _quantized_linear_dynamic}


def native_kernel(op: OpDef):
    """The kernel the executor runs `op` with (the op table's when there is no native one)."""
    make = KERNELS.get(op.name)
    return make(op) if make is not None else op.kernel
