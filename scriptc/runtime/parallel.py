"""The process's thread settings (torch.set_num_threads and friends) and the inter-op pool that runs
torch.jit.fork'ed calls concurrently (PyTorch's "CPU threading and TorchScript inference" model).

Intra-op threads split one kernel (the executor's ThreadPool, and BLAS when threadpoolctl, from the
serve extra, is installed); inter-op threads run forked calls. A forked call nobody has started
yet when its result is awaited runs on the waiting thread, so nested forks never deadlock a small
pool.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable

_settings = {"intra": None, "interop": None}
_lock = threading.Lock()


def _checked(n, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} expects an int, got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"{what}: number of threads must be positive, got {n}")
    return n


def set_num_threads(n: int) -> None:
    """Threads one op (a compiled kernel, a BLAS product) may use: torch.set_num_threads."""
    _settings["intra"] = _checked(n, "set_num_threads")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # BLAS keeps its own count without threadpoolctl (the serve extra)
        return
    threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    return _settings["intra"] or os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Threads that run torch.jit.fork'ed calls: torch.set_num_interop_threads."""
    with _lock:
        _settings["interop"] = _checked(n, "set_num_interop_threads")
        _pool.resize(n)


def get_num_interop_threads() -> int:
    return _settings["interop"] or os.cpu_count() or 1


class Task:
    """A forked call: run once, by a pool thread or by the first thread that waits for it."""

    def __init__(self, fn: Callable, args: tuple):
        self.fn, self.args = fn, args
        self._claim = threading.Lock()
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None

    def run(self) -> None:
        if not self._claim.acquire(blocking=False):
            return
        try:
            self._result = self.fn(*self.args)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self._error = exc
        finally:
            self._done.set()

    def wait(self):
        self.run()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result


class _InterOpPool:
    """Daemon threads taking Tasks from one queue; started on first use."""

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._size = 0

    def resize(self, n: int) -> None:
        self._size = n

    def submit(self, task: Task) -> Task:
        size = self._size or get_num_interop_threads()
        while len(self._threads) < size:
            thread = threading.Thread(target=self._work, daemon=True, name=f"scriptc-interop-{len(self._threads)}")
            thread.start()
            self._threads.append(thread)
        self._queue.put(task)
        return task

    def _work(self) -> None:
        while True:
            self._queue.get().run()


_pool = _InterOpPool()
os.register_at_fork(after_in_child=lambda: _pool.__init__())


def fork(fn: Callable, *args) -> Task:
    """Run fn(*args) on an inter-op thread; the Task's wait() gives its result."""
    return _pool.submit(Task(fn, args))
