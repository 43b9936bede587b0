"""Process-wide allocator settings for the runtime.

Kernels write large fresh output arrays on every call. glibc hands blocks above its mmap threshold
straight back to the kernel on free, so each call page-faults (and zeroes) its outputs again -
measured here: a 16 MB GELU output cost 3x the kernel itself. Raising the mmap and trim thresholds
keeps freed blocks in the heap for the next call.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_configured: list = []


def configure_allocator() -> bool:
    """Keep up to 32 MB blocks in the heap (glibc only; elsewhere a no-op). Returns whether applied."""
    if _configured:
        return _configured[0]
    applied = False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        applied = bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 512 << 20))
    except (OSError, AttributeError):
        applied = False
    _configured.append(applied)
    return applied
