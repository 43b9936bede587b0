"""The runtime's thread pool: splits a compiled kernel's [0, n) range across workers.

On Linux the workers are native loops (native/threads.py) that ctypes started once and
that never hold the GIL: a hand-off costs ~2 us, so kernels of tens of microseconds split with
profit. The workers are shared by every pool in the process (and every segment program, native/
program.py); a call that finds them busy (another thread is splitting a kernel: a flag taken by
compare-and-swap, never waited for) runs its kernel whole on its own thread. A split keeps the
workers off its caller's CPU (native/threads.py, scriptc_keep_off), within the caller's own affinity
mask. Elsewhere, Python threads (~60 us a hand-off) take the slices.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from scriptc.native import threads as native

MAX_WORKERS = 63
# How long ensure() waits for new workers to reach their native loop (it takes ~0.1 ms).
START_TIMEOUT_S = 5.0
_SPLIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                          ctypes.c_void_p, ctypes.c_void_p)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _NativeWorkers:
    """The process's native worker threads, started on first use and after a fork."""

    def __init__(self):
        self._start_lock = threading.Lock()
        # Blocks and flags of before a fork stay allocated: segment programs may hold their addresses
        # (a forked child's calls then post jobs no worker takes, and run every slice themselves).
        self._retired: list = []
        self._reset()

    def _reset(self) -> None:
        if hasattr(self, "_memory"):
            # (their thread ids are the parent's threads now: a split through them must not pin those)
            self._field(native.KEPT_OFF_AT).value = native.NO_PINNING
            self._retired.append((self._memory, self.state))
        self.state = ctypes.create_string_buffer(native.TIDS_AT + 4 * MAX_WORKERS)  # native/threads.py's layout
        self.state_address = ctypes.addressof(self.state)
        self._field(native.KEPT_OFF_AT).value = native.KEEP_OFF_UNKNOWN
        self.started = 0
        self._threads: list[threading.Thread] = []
        self._memory = ctypes.create_string_buffer(native.BLOCK_BYTES * (MAX_WORKERS + 1))
        self.blocks = -(-ctypes.addressof(self._memory) // native.BLOCK_BYTES) * native.BLOCK_BYTES
        self._split = None
        self.split_address = 0

    def ensure(self, count: int) -> None:
        if self.started >= count:
            return
        with self._start_lock:
            addresses = native.functions()
            self.split_address = addresses["scriptc_split"]
            self._split = _SPLIT(self.split_address)
            worker = _WORKER(addresses["scriptc_worker"])
            blocks = [self.blocks + native.BLOCK_BYTES * index for index in range(self.started, count)]
            for index, block in enumerate(blocks, self.started):
                thread = threading.Thread(target=worker, args=(block,), daemon=True, name=f"scriptc-{index}")
                thread.start()
                self._threads.append(thread)
            _wait_running(blocks)
            for index, thread in enumerate(self._threads[self.started:count], self.started):
                self._field(native.TIDS_AT + 4 * index).value = thread.native_id
            self._field(native.COUNT_AT).value = count
            self._field(native.KEPT_OFF_AT).value = native.KEEP_OFF_UNKNOWN  # (the next split pins the new ones too)
            self.started = count

    def _field(self, offset: int) -> ctypes.c_int32:
        return ctypes.c_int32.from_address(self.state_address + offset)

    def run(self, workers: int, kernel, n: int, ptrs, meta) -> None:
        self._split(self.blocks, workers, self.state_address, kernel.address, n, ptrs, meta)


def _wait_running(blocks: list[int]) -> None:
    """Wait (the GIL released) until the worker of each block runs its native loop: it has gone to
    sleep there or run a job. When Thread.start returns, a worker still needs the GIL for the
    bytecodes before its ctypes call: with the starting thread busy in Python it had not reached its
    loop after 1-8 ms (after 0.2 ms of that thread asleep, always). Until it has, it runs no job (and
    callers do not wake it: it has not set `sleeping`): at real-time priority (chrt -f), where the
    starting thread keeps its CPU, word-LM's worker ran none of the 1669 jobs its load posted, and
    its first calls after load ran at one thread's speed (1.7x the steady time at two threads)."""
    flags = [(ctypes.c_int32.from_address(block + native.SLEEPING_AT),
              ctypes.c_int32.from_address(block + native.DONE_AT)) for block in blocks]
    deadline = time.perf_counter() + START_TIMEOUT_S
    while not all(sleeping.value or done.value for sleeping, done in flags) and time.perf_counter() < deadline:
        time.sleep(1e-4)


_native = _NativeWorkers() if native.supported() else None
if _native is not None:
    # A forked child has none of the parent's threads: it starts its own on first use.
    os.register_at_fork(after_in_child=_native._reset)


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

    def start_workers(self) -> None:
        """Start the native workers a split would use now (their code compiled, or read from the disk
        cache), with a plan, rather than at its first split."""
        if _native is not None and self.size > 1:
            _native.ensure(min(self.size, MAX_WORKERS + 1) - 1)

    def native_workers(self) -> tuple[int, int, int, int] | None:
        """What native code needs to split a kernel across this pool's workers: (the workers' blocks,
        how many to use, the address of the pool state - its busy flag first - and scriptc_split's
        address); None when the pool has no native workers (one thread, or a platform without them)."""
        if _native is None or self.size <= 1:
            return None
        count = min(self.size, MAX_WORKERS + 1) - 1
        _native.ensure(count)
        return _native.blocks, count, _native.state_address, _native.split_address

    def split(self, kernel, n: int, ptrs, meta) -> None:
        """Run the compiled kernel over [0, n) in up to `size` contiguous slices (this thread runs one)."""
        parts = min(self.size, n, MAX_WORKERS + 1)
        if parts <= 1:
            kernel.function(0, n, ptrs, meta)
        elif _native is not None:
            _native.ensure(parts - 1)
            _native.run(parts - 1, kernel, n, ptrs, meta)
        else:
            self.run_slices(lambda start, end: kernel.function(start, end, ptrs, meta), n)

    def run_slices(self, fn, n: int) -> None:
        """Call fn(start, end) over [0, n) in up to `size` contiguous slices on Python threads (this
        thread runs the first): for work that spends its time in calls that release the GIL (BLAS,
        ctypes). The first exception a slice raises is raised here, after every slice has ended."""
        parts = min(self.size, n)
        if parts <= 1:
            fn(0, n)
            return
        bounds = [n * i // parts for i in range(parts + 1)]
        futures = [self._workers().submit(fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
        try:
            fn(bounds[0], bounds[1])
        finally:
            for f in futures:
                f.exception()
        for f in futures:
            f.result()
