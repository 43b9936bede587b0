"""Native parts of the executor's library-backed heads (ops whose kernel is numpy plus BLAS).

`head_kernel(op)` is the kernel a fused group's head runs: the op table's own, except where this
backend has a faster piece for it - conv2d's im2col (im2col.py) is compiled, and so are its
products and bias on a CPU with 512-bit vectors (gemm.py; elsewhere BLAS's GEMM), a batch's images
run whole or side by side, one per thread (ConvMode); a matmul of a few rows (a small batch through
a layer) is a compiled loop split across the pool (matvec.py), and one of more rows the compiled
GEMM where it runs. A conv2d whose group does nothing after it but a ReLU (or another floor) has
its products apply it as they store (`floor`; a ReLU6's or a clamp's ceiling after it, numpy's
minimum), and the group launches no kernel of its own (a
conv_transpose2d's, here, after it: the programs' col2im applies it as it writes each row).
Same arguments, checks, errors and results (up to rounding) as the op table's kernel; eager code
keeps the op table's numpy kernel.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from dataclasses import dataclass

import numpy as np

from scriptc.ops import OpDef

from scriptc.codegen.llvm.driver import KERNEL_TYPE, has_wide_vectors

from . import blocked_depthwise, depthwise, gemm, im2col, matvec, windows
from .blas import single_threaded
from .geometry import conv_geometry
from .loops import loop_function
from .pointers import data_pointer

# A matmul of this many rows streams its right-hand matrix once through the native loop (matvec.py);
# one row is BLAS's GEMV, and from 8 rows on BLAS's GEMM (which reuses each loaded tile for many
# rows) is as fast. Narrow products (a classifier's 10 columns) are left to BLAS as well.
MATVEC_ROWS = range(2, 7)
MATVEC_MIN_COLUMNS = 64
# Below this many multiply-adds (~5 us) the loop runs on the calling thread: a split costs ~2 us.
MATVEC_SPLIT_MIN = 1 << 15
# From this many rows a matmul and a convolution's products run through the compiled register-tiled
# GEMM (gemm.py), where this CPU has 512-bit vectors: twice OpenBLAS's rate where OpenBLAS is held to
# its 256-bit kernels (OPENBLAS_CORETYPE=Haswell), ~1.5x on the small products of a narrow
# convolution.
GEMM_MIN_ROWS = MATVEC_ROWS.stop
# Below this many multiply-adds (~1 us) the GEMM runs on the calling thread.
GEMM_SPLIT_MIN = 1 << 17
# A convolution makes its columns (and runs its GEMMs) this many bytes of them at a time (ops/linalg.py).
CONV_COLUMN_BYTES = 4 << 20
# A batch whose convolution takes about this many multiply-adds or more (~0.2 ms) can also run its
# images side by side, one slice of the batch per pool thread, each image through im2col and a
# single-threaded GEMM while its columns are in that core's cache (this many bytes at a time), when
# that is the faster way here (ConvMode).
CONV_BY_IMAGE_MIN = 1 << 23
CONV_THREAD_COLUMN_BYTES = 1 << 20


def head_kernel(op: OpDef, split=None, dtype: str | None = None, parts: int = 1, run_slices=None,
                floor: float | None = None, ceiling: float | None = None, slope: float | None = None):
    """The kernel to run `op` with as a fused group's head; `split(loop, n, ptrs, meta)` runs a
    compiled loop's [0, n) on the caller's threads (the runtime pool's split, of `parts` threads)
    and `run_slices(fn, n)` a Python function's (the pool's run_slices); `dtype`, the dtype name
    the group's guard expects of the head's first input, has its loop compiled (or read from the
    disk cache) now, with the plan, rather than at a first call. `floor` (an op with
    OpDef.head_floor): the kernel returns numpy's maximum of the op's result and it, a ReLU the group
    fused after the head, written by the products themselves; and `ceiling` (with a floor) numpy's
    minimum of that and it, a ReLU6's or a clamp's; `slope` (alone) where(result > 0, result, result
    * slope), a LeakyReLU's, applied to the result here (the segment programs' products apply it as
    they store)."""
    if (floor is not None or slope is not None) and not op.head_floor:
        raise ValueError(f"{op.name} takes no floor")
    if slope is not None:
        if floor is not None or ceiling is not None:
            raise ValueError("a slope takes no floor or ceiling")
        plain = head_kernel(op, split, dtype, parts, run_slices)

        def leaky(xp, *args, **options):
            out = plain(xp, *args, **options)
            return xp.where(out > 0, out, out * slope).astype(out.dtype, copy=False)
        return leaky
    if ceiling is not None:
        if floor is None:
            raise ValueError("a ceiling needs a floor")
        floored = head_kernel(op, split, dtype, parts, run_slices, floor)

        def clamped(xp, *args, **options):
            out = floored(xp, *args, **options)
            return xp.minimum(out, ceiling, out=out) if type(out) is np.ndarray else xp.minimum(out, ceiling)
        return clamped
    if op.name == "conv2d":
        if dtype in im2col.FUNCTIONS:
            _native_loop("im2col", dtype)
            _native_loop("depthwise", dtype)
            _native_loop("blocked_depthwise", dtype)
            if gemm_runs():
                _native_loop("gemm", dtype)

        def depthwise_first(kernel):
            def conv2d(xp, x, w, b=None, stride=1, padding=0, dilation=1, groups=1, **options):
                out = native_depthwise(xp, x, w, b, stride, padding, dilation, groups, floor, split)
                return out if out is not None else kernel(xp, x, w, b, stride, padding, dilation, groups, **options)
            return conv2d
        whole = depthwise_first(functools.partial(op.kernel, im2col=functools.partial(native_im2col, split=split),
                                                  matmul=functools.partial(native_conv_products, split=split),
                                                  column_bytes=CONV_COLUMN_BYTES, floor=floor))
        blas = single_threaded() if run_slices is not None and parts > 1 else None
        if blas is None:
            return whole
        one_image_per_thread = functools.partial(op.kernel, im2col=native_im2col, matmul=native_conv_products,
                                                 column_bytes=CONV_THREAD_COLUMN_BYTES, run_slices=run_slices,
                                                 floor=floor)

        def conv2d(xp, x, w, *args, **options):
            # (Its multiply-adds at stride 1, an upper bound: the arguments are checked later, by the kernel.)
            work = x.shape[0] * w.size * x.shape[2] * x.shape[3] if (
                xp is np and type(x) is np.ndarray and type(w) is np.ndarray and x.ndim == 4 and w.ndim == 4) else 0
            if work < CONV_BY_IMAGE_MIN or x.shape[0] < 2:
                return whole(xp, x, w, *args, **options)
            by_image = CONV_MODE.by_image
            started = time.perf_counter()
            if by_image:
                with blas.section():
                    out = one_image_per_thread(xp, x, w, *args, **options)
            else:
                out = whole(xp, x, w, *args, **options)
            CONV_MODE.record(by_image, time.perf_counter() - started, work)
            return out
        return conv2d
    if op.name == "conv_transpose2d" and floor is not None:
        def conv_transpose2d(xp, *args, **options):
            out = op.kernel(xp, *args, **options)
            return xp.maximum(out, floor, out=out) if type(out) is np.ndarray else xp.maximum(out, floor)
        return conv_transpose2d
    if op.name == "matmul" and dtype in matvec.FUNCTIONS:
        _native_loop("matvec", dtype)
        tiled = gemm_runs()
        if tiled:
            _native_loop("gemm", dtype)
        fallback = op.kernel

        def matmul(xp, a, b):
            # Batch 1 is the op table's (BLAS's GEMV): told apart first, cheaply.
            if type(a) is np.ndarray and a.ndim == 2 and a.shape[0] > 1:
                if a.shape[0] in MATVEC_ROWS:
                    return native_matmul(xp, a, b, fallback, split, parts)
                if tiled and xp is np:
                    out = native_gemm(a, b, split=split)
                    if out is not None:
                        return out
            return fallback(xp, a, b)
        return matmul
    return op.kernel


class ConvMode:
    """Process-wide: whether a batch's convolution runs whole (im2col and each product split across
    the pool; BLAS threading each GEMM where the compiled GEMM does not run) or image by image (a
    slice of the batch per pool thread, BLAS single-threaded). Neither is faster everywhere:
    OpenBLAS's workers spin for ~0.1 s after each threaded BLAS call (anyone's in the process) and
    while they do, a core is theirs. Image by image is ~30%
    faster on an idle 2-core machine (the benchmark's CNN: 10 vs 13-19 ms) and ~30% slower beside
    an MLP's GEMMs - and one conv left whole wakes the spinners that slow the next one image by
    image, so every conv in the process takes the same way. So both are timed: each in turn for a
    phase (SETTLE_S for the other way's spinners to stop, then MEASURE_S of conv time per
    multiply-add), then the faster one runs, and the other is timed again every PROBE_AFTER phases."""

    SETTLE_S = 0.15
    MEASURE_S = 0.25
    PROBE_AFTER = 40

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        # Image by image first: a model alone in its process (the usual case) runs its first calls
        # the way it will keep running them.
        self.by_image = True
        self.cost: list = [None, None]  # seconds per multiply-add: whole, by image
        self._lock = threading.Lock()
        self._phase_started = None
        self._seconds = self._work = 0.0
        self._phases = 0

    def record(self, by_image: bool, seconds: float, work: int) -> None:
        """A conv call's time, run the way `by_image` says, of about `work` multiply-adds."""
        with self._lock:
            if by_image != self.by_image:
                return  # it began before the switch
            now = self.clock()
            if self._phase_started is None:
                self._phase_started = now
            if now - self._phase_started < self.SETTLE_S:
                return
            self._seconds += seconds
            self._work += work
            if now - self._phase_started < self.SETTLE_S + self.MEASURE_S:
                return
            self.cost[by_image] = self._seconds / self._work
            self._phase_started, self._seconds, self._work = None, 0.0, 0.0
            self._phases += 1
            if None in self.cost:
                self.by_image = self.cost[True] is None
            else:
                best = self.cost[True] < self.cost[False]
                self.by_image = not best if self._phases % self.PROBE_AFTER == 0 else best


CONV_MODE = ConvMode()


@dataclass(frozen=True)
class _Loop:
    """A compiled loop as the pool splits it."""
    function: object
    address: int


@functools.cache
def _native_loop(kind: str, dtype: str) -> _Loop:
    address = loop_function(kind, dtype)
    return _Loop(KERNEL_TYPE(address), address)


# Every native loop has a float32 and a float64 function: their names by dtype (a dtype's .name takes 2-4 us).
_LOOP_DTYPES = {np.dtype(name): name for name in gemm.FUNCTIONS}
assert set(_LOOP_DTYPES.values()) == set(matvec.FUNCTIONS) == set(im2col.FUNCTIONS) == set(depthwise.FUNCTIONS) == \
    set(blocked_depthwise.FUNCTIONS)


def native_matmul(xp, a, b, fallback, split=None, parts: int = 1):
    """a @ b for a of MATVEC_ROWS rows and b a matrix of at least MATVEC_MIN_COLUMNS columns, both
    contiguous and of one float dtype, from the compiled loop (split in `parts` by `split` when
    given and the product is big enough); anything else from `fallback`, the op table's kernel."""
    dtype = _LOOP_DTYPES.get(a.dtype) if type(a) is np.ndarray else None
    if (dtype is None or xp is not np or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2 or
            a.dtype != b.dtype or a.shape[0] not in MATVEC_ROWS or a.shape[1] != b.shape[0] or
            b.shape[1] < MATVEC_MIN_COLUMNS or not a.flags.c_contiguous or not b.flags.c_contiguous):
        return fallback(xp, a, b)
    (rows, depth), width = a.shape, b.shape[1]
    chunks = min(parts, depth) if split is not None and rows * depth * width >= MATVEC_SPLIT_MIN else 1
    partials = np.empty((chunks, rows, width), dtype=a.dtype)
    loop = _native_loop("matvec", dtype)
    ptrs = (ctypes.c_void_p * 3)(data_pointer(a), data_pointer(b), data_pointer(partials))
    meta = (ctypes.c_int64 * 4)(rows, depth, width, chunks)
    if chunks > 1:
        split(loop, chunks, ptrs, meta)
    else:
        loop.function(0, 1, ptrs, meta)
    out = partials[0]
    for partial in partials[1:]:
        np.add(out, partial, out=out)
    return out


@functools.cache
def gemm_runs() -> bool:
    """Whether the compiled GEMM (gemm.py) runs on this CPU (it is written for 512-bit vectors)."""
    return has_wide_vectors()


def _gemm_applies(a, b, out=None) -> bool:
    dtype = _LOOP_DTYPES.get(a.dtype) if type(a) is np.ndarray else None
    return (dtype is not None and gemm_runs() and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2 and
            a.dtype == b.dtype and a.shape[0] >= GEMM_MIN_ROWS and a.shape[1] == b.shape[0] and
            a.flags.c_contiguous and b.flags.c_contiguous and
            (out is None or (type(out) is np.ndarray and out.dtype == a.dtype and
                             out.shape == (a.shape[0], b.shape[1]) and out.flags.c_contiguous)))


@functools.lru_cache(maxsize=64)
def _zeros(rows: int, dtype: np.dtype) -> np.ndarray:
    zeros = np.zeros(rows, dtype)
    zeros.flags.writeable = False
    return zeros


@functools.lru_cache(maxsize=64)
def epilogue(floor: float | None, ceiling: float | None, dtype: np.dtype,
             slope: float | None = None) -> tuple[np.ndarray, int]:
    """The bounds the native loops' epilogues read (gemm.py, depthwise.py, blocked_depthwise.py,
    col2im.py) and their mode word: [floor, ceiling, slope] (read only), and 0 for none, 1 for
    maximum(result, floor) (a fused ReLU), 2 for minimum(maximum(result, floor), ceiling) (a ReLU6),
    3 for where(result > 0, result, result * slope) (a LeakyReLU; a NaN stays, as it compares false;
    floor and ceiling -inf and inf then, so that a loop may apply them too)."""
    if slope is not None:
        if floor is not None or ceiling is not None:
            raise ValueError("a slope takes no floor or ceiling")
        bounds = np.array([-np.inf, np.inf, slope], dtype)
    else:
        bounds = np.array([0.0 if floor is None else floor, np.inf if ceiling is None else ceiling, 0.0], dtype)
    bounds.flags.writeable = False
    return bounds, 3 if slope is not None else 0 if floor is None else 1 if ceiling is None else 2


def _run_gemm(a, b, out, split, bias=None, floor: float | None = None) -> None:
    (rows, depth), width = a.shape, b.shape[1]
    dtype = _LOOP_DTYPES[a.dtype]
    loop = _native_loop("gemm", dtype)
    bounds, mode = epilogue(floor, None, a.dtype)
    step = 0 if bias is None else 1
    bias = _zeros(1, a.dtype) if bias is None else bias
    ptrs = (ctypes.c_void_p * 5)(data_pointer(a), data_pointer(b), data_pointer(out), data_pointer(bias),
                                 data_pointer(bounds))
    meta = (ctypes.c_int64 * 7)(rows, depth, width, mode, step, width, width)
    vectors = -(-width // gemm.vector_columns(dtype))
    if split is not None and rows * depth * width >= GEMM_SPLIT_MIN:
        split(loop, vectors, ptrs, meta)
    else:
        loop.function(0, vectors, ptrs, meta)


def native_gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, split=None) -> np.ndarray | None:
    """a @ b (into `out` when given) from the compiled GEMM, its columns split by `split` when given
    and the product is big enough: for a of GEMM_MIN_ROWS rows or more and b, both 2-D, contiguous
    and of one float dtype, on a CPU with 512-bit vectors; None for anything else, for the caller's
    BLAS."""
    if not _gemm_applies(a, b, out):
        return None
    if out is None:
        out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    _run_gemm(a, b, out, split)
    return out


def native_conv_products(weights: np.ndarray, cols: np.ndarray, out: np.ndarray, bias: np.ndarray | None = None,
                         floor: float | None = None, split=None) -> np.ndarray | None:
    """out[i, g] = weights[g] @ cols[i, g] (+ the group's part of `bias`, one value per output
    channel; then numpy's maximum with `floor` where given: a fused ReLU's 0) for conv2d's
    (G, O/G, K) weights, (N, G, K, OH*OW) columns and (N, G, O/G, OH*OW) output, from the compiled
    GEMM (native_gemm); None where it does not apply, for xp.matmul."""
    if (type(cols) is not np.ndarray or type(weights) is not np.ndarray or type(out) is not np.ndarray or
            cols.ndim != 4 or not (weights.flags.c_contiguous and cols.flags.c_contiguous and out.flags.c_contiguous)
            or not _gemm_applies(weights[0], cols[0, 0], out[0, 0])):
        return None
    groups, per_group = weights.shape[:2]
    if bias is not None:
        if type(bias) is not np.ndarray or bias.dtype != weights.dtype or bias.shape != (groups * per_group,):
            return None
        bias = np.ascontiguousarray(bias).reshape(groups, per_group)
    for image in range(cols.shape[0]):
        for group in range(groups):
            _run_gemm(weights[group], cols[image, group], out[image, group], split,
                      None if bias is None else bias[group], floor)
    return out


@functools.lru_cache(maxsize=256)
def _im2col_words(*geometry: int):
    """The im2col loop's meta words for a geometry (a plan's convolutions see a few; the loop only
    reads them, from any thread)."""
    meta = im2col.conv2d_meta(*geometry)
    return (ctypes.c_int64 * len(meta))(*meta)


def native_im2col(xp, x, w, sh, sw, ph, pw, dh, dw, oh, ow, groups, split=None, band=None):
    """The columns the op table's im2col makes, (N, G, C/G*KH*KW, OH*OW), from the compiled loop (its
    rows, one per image and channel, split by `split` when given) - or the input itself, viewed so, for
    a 1x1 convolution of stride 1 without padding; None where it has no loop (another array module
    or dtype), for the op table's to make. `band` (first, end): only the columns of those output rows,
    (N, G, C/G*KH*KW, (end - first)*OW), from the loop."""
    dtype = _LOOP_DTYPES.get(x.dtype) if xp is np and type(x) is np.ndarray else None
    if dtype is None:
        return None
    if band is None and w.shape[2:] == (1, 1) and (sh, sw, ph, pw) == (1, 1, 0, 0) and x.flags.c_contiguous:
        n, c, h, width = x.shape
        return x.reshape(n, groups, c // groups, h * width)
    loop = _native_loop("im2col", dtype)
    x = np.ascontiguousarray(x)
    n, c, h, width = x.shape
    kh, kw = w.shape[2:]
    first, end = (0, oh) if band is None else band
    cols = np.empty((n, groups, (c // groups) * kh * kw, (end - first) * ow), dtype=x.dtype)
    words = _im2col_words(h, width, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, (first, end))
    ptrs = (ctypes.c_void_p * 2)(data_pointer(x), data_pointer(cols))
    if split is not None:
        split(loop, n * c, ptrs, words)
    else:
        loop.function(0, n * c, ptrs, words)
    return cols


def native_depthwise(xp, x, w, b, stride, padding, dilation, groups, floor=None, split=None):
    """conv2d of a depthwise convolution (groups == input channels == output channels) from a
    compiled loop (depthwise.py, or blocked_depthwise.py where that takes it), its planes split by
    `split` when given and there is work enough, then maximum(result, floor) where floor is given.
    None for anything else (other arguments, array modules, dtypes), for the op table's kernel."""
    dtype = _LOOP_DTYPES.get(x.dtype) if xp is np and type(x) is np.ndarray else None
    if (dtype is None or type(w) is not np.ndarray or x.ndim != 4 or w.ndim != 4 or w.dtype != x.dtype or
            groups != x.shape[1] or w.shape[:2] != (groups, 1) or
            (b is not None and (type(b) is not np.ndarray or b.dtype != x.dtype or b.shape != (groups,)))):
        return None
    geometry = conv_geometry(x.shape, w.shape, stride, padding, dilation, groups)
    if geometry is None:
        return None  # (the op table's kernel raises the user's error)
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    n, c, h, width = x.shape
    x = np.ascontiguousarray(x)
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    bounds, mode = epilogue(floor, None, x.dtype)
    meta = (ctypes.c_int64 * 14)(c, h, width, oh, ow, w.shape[2], w.shape[3], sh, sw, ph, pw, dh, dw, mode)
    if blocked_depthwise.takes((h, width), w.shape[2:], geometry):
        taps, bias = blocked_depthwise.packed(w, b)
        loop, count = _native_loop("blocked_depthwise", dtype), n * -(-c // blocked_depthwise.lanes(dtype))
        ptrs = (ctypes.c_void_p * 5)(data_pointer(x), data_pointer(taps), data_pointer(bias), data_pointer(out),
                                     data_pointer(bounds))
    else:
        taps = np.ascontiguousarray(w.reshape(c, -1))
        bias = _zeros(c, x.dtype) if b is None else np.ascontiguousarray(b)
        rows, columns = windows.positions(oh, ow, dtype)
        loop, count = _native_loop("depthwise", dtype), n * c
        ptrs = (ctypes.c_void_p * 7)(data_pointer(x), data_pointer(taps), data_pointer(bias), data_pointer(out),
                                     data_pointer(bounds), data_pointer(rows), data_pointer(columns))
    if split is not None and out.size * w.shape[2] * w.shape[3] >= GEMM_SPLIT_MIN:
        split(loop, count, ptrs, meta)
    else:
        loop.function(0, count, ptrs, meta)
    return out
