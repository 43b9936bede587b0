"""Calling a compiled loop kernel (start, end, ptrs, meta) the way the runtime does: over ranges of its
iteration space, with its arrays' addresses and its meta words."""

from __future__ import annotations

import ctypes

from scriptc.codegen.llvm.driver import KERNEL_TYPE


def run_ranges(function: int, ranges: list, arrays: list, meta: list) -> None:
    """Run the kernel at address `function` over each (start, end) of `ranges`, in order."""
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    words = (ctypes.c_int64 * len(meta))(*meta)
    run = KERNEL_TYPE(function)
    for start, end in ranges:
        run(start, end, ptrs, words)


def run_in_parts(function: int, total: int, arrays: list, meta: list, parts: int = 1) -> None:
    """Run the kernel over [0, total) split into `parts` consecutive ranges of about equal size."""
    bounds = [total * k // parts for k in range(parts + 1)]
    run_ranges(function, list(zip(bounds, bounds[1:])), arrays, meta)
