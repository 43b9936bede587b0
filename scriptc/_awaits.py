"""torch._awaits: the Await[T] that torch.jit._awaitable returns (a call made when waited on)."""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
_PENDING = object()


class _Await(Generic[T]):
    """A delayed call: `torch.jit._awaitable_wait(aw)` runs `fn(*args)` once and keeps its result
    (`_awaitable_nowait(x)` makes one that holds x already). Other attributes are the result's
    (aw.dtype), as torch's Await reads them. In scripted code it is an Await[T] value."""

    def __init__(self, fn: Callable | None, args: tuple, kwargs: dict, value: Any = _PENDING):
        self._fn, self._args, self._kwargs, self._value = fn, args, kwargs, value
        self._nowait = value is not _PENDING

    def fn(self) -> Callable:
        return self._fn if self._fn is not None else (lambda *args: self._value)

    def args(self) -> tuple:
        return self._args

    def is_nowait(self) -> bool:
        return self._nowait

    def wait(self):
        if self._value is _PENDING:
            self._value = self._fn(*self._args, **self._kwargs)
        return self._value

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.wait(), name)
