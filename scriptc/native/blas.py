"""numpy's own BLAS, found for native code to call (segment programs' GEMV and GEMM, program.py) and
for the executor to run single-threaded for a while (conv2d's images in parallel, heads.py).

numpy's Linux and macOS wheels carry OpenBLAS built with 64-bit integers, its symbols suffixed
`64_` (scipy-openblas: `scipy_cblas_sgemv64_`; older wheels: `cblas_sgemv64_`). Only those are
used, so that the integer width is known; where none is found (numpy built against another BLAS)
programs use the compiled loops alone (or leave products to the executor's steps).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading

import numpy as np

_PREFIXES = ("libscipy_openblas", "libopenblas")
_SYMBOLS = {"float32": ("scipy_cblas_sgemv64_", "cblas_sgemv64_"), "float64": ("scipy_cblas_dgemv64_", "cblas_dgemv64_")}
_GEMM_SYMBOLS = {"gemm_float32": ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
                 "gemm_float64": ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}
_THREAD_SYMBOLS = {"get": ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_"),
                   "set": ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_")}


def _find(library, names: tuple) -> int | None:
    for symbol in names:
        if hasattr(library, symbol):
            return ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
    return None


@functools.cache
def _symbols() -> dict[str, int] | None:
    """The addresses of every symbol above, from the first of numpy's bundled libraries that has
    them all, or None."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    wanted = {**_SYMBOLS, **_GEMM_SYMBOLS, **_THREAD_SYMBOLS}
    for folder in (os.path.join(root, "numpy.libs"), os.path.join(os.path.dirname(np.__file__), ".dylibs")):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.startswith(_PREFIXES):
                continue
            try:
                library = ctypes.CDLL(os.path.join(folder, name))
            except OSError:
                continue
            found = {key: _find(library, names) for key, names in wanted.items()}
            if all(found.values()):
                return found
    return None


def gemv_addresses() -> dict[str, int] | None:
    """{'float32': address of cblas_sgemv, 'float64': of cblas_dgemv} in numpy's BLAS, or None."""
    found = _symbols()
    return None if found is None else {dtype: found[dtype] for dtype in _SYMBOLS}


def cblas_addresses() -> dict[str, dict[str, int]] | None:
    """{"gemv": {dtype name: address}, "gemm": {...}} of numpy's BLAS (64-bit integers), or None."""
    found = _symbols()
    if found is None:
        return None
    return {"gemv": {dtype: found[dtype] for dtype in _SYMBOLS},
            "gemm": {dtype: found[f"gemm_{dtype}"] for dtype in _SYMBOLS}}


class _SingleThreaded:
    """BLAS's thread count, set to 1 while any caller is inside and put back when the last leaves
    (callers on several threads overlap: the first saves the count, the last restores it)."""

    def __init__(self, get_address: int, set_address: int):
        self._get = ctypes.CFUNCTYPE(ctypes.c_int)(get_address)
        self._set = ctypes.CFUNCTYPE(None, ctypes.c_int)(set_address)
        self._lock = threading.Lock()
        self._inside = 0
        self._saved = 1

    @contextlib.contextmanager
    def section(self):
        with self._lock:
            if self._inside == 0:
                self._saved = self._get()
                if self._saved != 1:
                    self._set(1)
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0 and self._saved != 1:
                    self._set(self._saved)


@functools.cache
def single_threaded() -> _SingleThreaded | None:
    """`single_threaded().section()`: a context in which numpy's BLAS runs each call on the calling
    thread alone, so that several threads can each run their own GEMMs side by side (OpenBLAS's
    threaded GEMMs called from two threads at once queue on its one set of workers: 3x slower).
    Process-wide while it lasts: a GEMM another thread starts then runs single-threaded too. None
    where numpy's BLAS is not a known OpenBLAS."""
    found = _symbols()
    return None if found is None else _SingleThreaded(found["get"], found["set"])
