"""torch.compiler: the controls around torch.compile (reset its caches, keep a function out of it,
ask whether code is being captured) and the list of its backends."""

from __future__ import annotations

import functools
from typing import Callable

from .capture import Unsupported, capturing, reset_all

__all__ = ["reset", "disable", "is_compiling", "is_dynamo_compiling", "list_backends", "Unsupported"]

BACKENDS = {"inductor": (), "eager": ("debug",), "aot_eager": ("debug",)}


def reset() -> None:
    """Forget every program torch.compile has built: the next call of each compiled function or module
    captures and compiles again (after changing what its guards cannot see, such as Python globals
    other than tensors and modules)."""
    reset_all()


def is_compiling() -> bool:
    """True while torch.compile is capturing code (code can take a different path then); False when
    the code runs eagerly or from a compiled program."""
    return capturing()


is_dynamo_compiling = is_compiling


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """Keep `fn` out of torch.compile (as a decorator too): a compiled function that calls it runs
    eagerly, as a whole (scriptc compiles a function in one piece or not at all)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def run_eagerly(*args, **kwargs):
        if capturing():
            raise Unsupported(f"call to a torch.compiler.disable'd function {getattr(fn, '__qualname__', fn)!r}"
                              + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)
    run_eagerly._torchdynamo_disable = True
    return run_eagerly


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The names torch.compile(backend=...) takes, without those tagged with one of `exclude_tags`."""
    excluded = set(exclude_tags or ())
    return sorted(name for name, tags in BACKENDS.items() if not excluded.intersection(tags))
