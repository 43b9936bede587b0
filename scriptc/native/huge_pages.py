"""Arrays on 2 MB pages, for data a program streams through on every call (a Linear's packed weights).

A batch-1 call of the MLP reads 2.6 MB of packed weights on 4 KB pages: 650 page-table entries, more
than the data TLB keeps next to everything else a call touches, and a page walk costs most under a
hypervisor (two levels of tables). Whatever runs between two calls evicts those entries, so the first
call after load, after building its input, or after any pause walked them all again: measured here,
the MLP's first batch-1 call after load took 1.45x its steady call with its weights on 4 KB pages and
1.32x on 2 MB ones (whose steady call was 3-4% faster too).

Arrays are carved one after another out of shared chunks of anonymous memory marked MADV_HUGEPAGE
(Linux's transparent huge pages, in "madvise" mode or "always"): only the pages arrays use are
touched, so the memory beyond what numpy would take is at most the rest of one 2 MB page per chunk. A
chunk is freed once no array of it lives (each array keeps its chunk) and a later chunk replaced it. Where
the platform has no such advice, arrays are plain numpy arrays.
"""

from __future__ import annotations

import mmap
import threading

import numpy as np

HUGE_PAGE = 1 << 21
CHUNK_BYTES = 32 << 20  # address space reserved a chunk (pages are only used as arrays fill them)
ALIGNMENT = 64          # each array starts on a cache line
_SUPPORTED = hasattr(mmap, "MADV_HUGEPAGE") and hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")


class _Chunk:
    """A run of 2 MB-aligned anonymous memory and how much of it arrays took."""

    def __init__(self, size: int):
        self.map = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            self.map.madvise(mmap.MADV_HUGEPAGE)
        except OSError:  # (a kernel without transparent huge pages: 4 KB pages, as numpy's)
            pass
        self.memory = np.frombuffer(self.map, np.uint8)
        self.used = (-self.memory.ctypes.data) % HUGE_PAGE  # (the first 2 MB boundary)
        self.end = self.used + size

    def take(self, nbytes: int) -> np.ndarray | None:
        start = -(-self.used // ALIGNMENT) * ALIGNMENT
        if start + nbytes > self.end:
            return None
        self.used = start + nbytes
        return self.memory[start:start + nbytes]


_chunk: _Chunk | None = None
_lock = threading.Lock()


def huge_page_copy(array: np.ndarray) -> np.ndarray:
    """A contiguous copy of `array` on 2 MB pages where the platform allows (else numpy's own)."""
    global _chunk
    if not _SUPPORTED or array.nbytes == 0:
        return np.ascontiguousarray(array).copy()
    with _lock:
        memory = _chunk.take(array.nbytes) if _chunk is not None else None
        if memory is None:
            try:
                _chunk = _Chunk(max(CHUNK_BYTES, -(-array.nbytes // HUGE_PAGE) * HUGE_PAGE))
            except OSError:  # (no address space to map)
                return np.ascontiguousarray(array).copy()
            memory = _chunk.take(array.nbytes)
    out = memory.view(array.dtype).reshape(array.shape)
    out[...] = array
    return out
