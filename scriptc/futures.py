"""torch.futures: a Future holds a result that arrives later (set_result / set_exception from any
thread; wait() blocks until then), chains callbacks (then, add_done_callback), and collect_all /
wait_all join several. What torch.jit.fork returns in eager code is a Future already completed."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")

__all__ = ["Future", "collect_all", "wait_all"]


class Future(Generic[T]):
    """A result that arrives later: `set_result(v)` or `set_exception(e)` completes it once; `wait()`
    blocks until then and returns the result (or raises the exception); `then(cb)` is a Future of
    `cb(self)`; `add_done_callback(cb)` runs `cb(self)` when it completes (at once if it has).
    Also `torch.jit.Future[T]` in annotations of scripted code."""

    def __init__(self, *, devices: list | None = None):
        from scriptc.types import device

        for d in devices or ():
            if device(d).index is None:
                raise ValueError(f"Expected devices to have indices, got {d}")
            if device(d).type != "cpu":
                raise RuntimeError(f"PyTorch is not linked with support for {device(d).type} devices")
        self._condition = threading.Condition()
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        """Whether the Future has its result (or its exception)."""
        return self._done

    def wait(self) -> T:
        """Block until the Future completes; its result, or raise the exception it was given."""
        with self._condition:
            self._condition.wait_for(lambda: self._done)
        return self.value()

    def value(self) -> T:
        """The result of a completed Future (raises the exception it was completed with)."""
        if not self._done:
            raise RuntimeError("value() was called on a Future that has not completed yet: call wait() first, or "
                               "read it in a callback given to then()")
        if self._exception is not None:
            raise self._exception
        return self._result

    def set_result(self, result: T) -> None:
        """Complete the Future with `result`, waking its waiters and running its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the Future with an error: wait() and value() raise it."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new Future of `callback(self)`, run once this one completes; an error the callback
        raises completes the new Future with torch's RuntimeError naming it."""
        chained: Future[S] = Future()

        def run(future: Future[T]) -> None:
            try:
                value = callback(future)
            except Exception as exc:  # noqa: BLE001 - the callback's error belongs to the chained Future
                chained.set_exception(RuntimeError(
                    f"Got the following error when running the callback: {type(exc).__name__}: {exc}"))
            else:
                chained.set_result(value)

        self.add_done_callback(run)
        return chained

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run `callback(self)` when the Future completes (now, if it has); an error it raises is
        reported on stderr, as torch logs it, not raised."""
        with self._condition:
            if not self._done:
                self._callbacks.append(callback)
                return
        _run_callback(callback, self)

    def _complete(self, result, exception: BaseException | None) -> None:
        with self._condition:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                                   "only be marked completed once.")
            self._result, self._exception, self._done = result, exception, True
            callbacks, self._callbacks = self._callbacks, []
            self._condition.notify_all()
        for callback in callbacks:
            _run_callback(callback, self)

    def __repr__(self) -> str:
        return f"<scriptc.jit.Future object at {id(self):#x}>"


def _run_callback(callback: Callable, future: Future) -> None:
    try:
        callback(future)
    except Exception as exc:  # noqa: BLE001 - torch logs a done-callback's error and goes on
        print(f"Got the following error when running the callback: {type(exc).__name__}: {exc}", file=sys.stderr)


def _completed(value: T) -> Future[T]:
    """A Future that already holds `value` (what jit.fork returns in eager code)."""
    future: Future[T] = Future()
    future.set_result(value)
    return future


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A Future that completes when every one of `futures` has, with the list of those Futures as
    its result; if one of them failed, waiting on it raises that error."""
    collected: Future[list[Future]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def arrived(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            failed = next((f._exception for f in futures if f._exception is not None), None)
            if failed is not None:
                collected.set_exception(failed)
            else:
                collected.set_result(list(futures))

    if not futures:
        collected.set_result([])
    for future in futures:
        future.add_done_callback(arrived)
    return collected


def wait_all(futures: list[Future]) -> list:
    """Wait for every one of `futures`; their results in order (raises the first error)."""
    return [future.wait() for future in collect_all(futures).wait()]
