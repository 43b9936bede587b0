"""Buffers that end right before an unreadable page, for native loops that must not read past their input."""

from __future__ import annotations

import ctypes
import mmap

import numpy as np

PROT_NONE = 0  # not in the mmap module


def flush_against_a_guard_page(values: np.ndarray):
    """A copy of `values` whose last byte is the last before an unreadable page, so that a loop
    reading one element past the input faults instead of reading a neighbour's bytes."""
    page = mmap.PAGESIZE
    size = -(-values.nbytes // page) * page
    region = mmap.mmap(-1, size + page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(base + size, page, PROT_NONE) == 0, ctypes.get_errno()
    flush = np.frombuffer(region, dtype=values.dtype, count=values.size,
                          offset=size - values.nbytes).reshape(values.shape)
    flush[...] = values
    return flush, lambda: libc.mprotect(base + size, page, mmap.PROT_READ | mmap.PROT_WRITE)
