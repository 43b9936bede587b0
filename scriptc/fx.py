"""torch.fx's markers that model code carries: wrap() registers a function as a leaf for FX tracing.

scriptc does not trace with FX; wrap is accepted so the modules that call it at import run unchanged.
"""

from __future__ import annotations

from typing import Callable, TypeVar

__all__ = ["wrap"]

F = TypeVar("F", Callable, str)


def wrap(fn_or_name: F) -> F:
    """torch.fx.wrap: mark a function (or a global function's name) as an FX leaf; returns its argument."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    return fn_or_name
