"""Array data addresses for native calls, fast.

An array's data address, read from numpy's public PyArrayObject struct (the `data` field follows
the object header) in 0.3 us; `a.ctypes.data` builds a helper object and costs 2 us, several
times a kernel launch's other work. Checked once against `a.ctypes.data`; where the layout is not
CPython's, that is what is used.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Callable

import numpy as np

# Every 8-byte word of memory, as an array indexed from address 8 (a NULL-based one would refuse access).
_WORDS = ctypes.cast(ctypes.c_void_p(8), ctypes.POINTER(ctypes.c_uint64))
_DATA_FIELD_OFFSET = 2 * ctypes.sizeof(ctypes.c_void_p)


def _read_data_field(a: np.ndarray) -> int:
    return _WORDS[(id(a) + _DATA_FIELD_OFFSET - 8) // 8]


def _layout_is_known() -> bool:
    if sys.implementation.name != "cpython":
        return False
    probe = np.arange(4.0)[1:]
    return _read_data_field(probe) == probe.ctypes.data


def _struct_is_known() -> bool:
    """Whether numpy's array struct keeps its rank (an int) and its dims pointer where native/program.py
    reads them: at 24 and 32 bytes, after the data pointer."""
    if not _layout_is_known():
        return False
    probe = np.empty((3, 5, 7))
    rank = ctypes.c_int32.from_address(id(probe) + 24).value
    dims = ctypes.c_void_p.from_address(id(probe) + 32).value
    return rank == 3 and dims is not None and list((ctypes.c_int64 * 3).from_address(dims)) == [3, 5, 7]


data_pointer: Callable[[np.ndarray], int] = _read_data_field if _layout_is_known() else (lambda a: a.ctypes.data)
# Whether native code may read an ndarray's data pointer, rank and dims from the object itself.
ARRAY_STRUCT_KNOWN = _struct_is_known()
