"""The runtime's thread pool: splits a compiled kernel's [0, n) range across workers.

ctypes releases the GIL for the call, so the slices run in parallel. Workers block on a queue
(they never spin), and the pool is created lazily, so single-threaded use costs nothing.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class ThreadPool:
    def __init__(self, size: int):
        self.size = max(1, int(size))
        self._executor = None
        self._lock = threading.Lock()

    def _workers(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self.size - 1, thread_name_prefix="scriptc")
        return self._executor

    def split(self, kernel, n: int, *args) -> None:
        """Run kernel(start, end, *args) over [0, n) in `size` contiguous slices (this thread runs one)."""
        parts = min(self.size, n)
        bounds = [n * i // parts for i in range(parts + 1)]
        futures = [self._workers().submit(kernel, bounds[i], bounds[i + 1], *args) for i in range(1, parts)]
        kernel(bounds[0], bounds[1], *args)
        for f in futures:
            f.result()
