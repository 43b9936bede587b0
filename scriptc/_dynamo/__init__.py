"""torch._dynamo: the parts tutorials and model code reach for around torch.compile - reset, the
recompile limit in `config`, marking dims dynamic or functions allowed in the graph, and
`utils.is_compile_supported`.

scriptc's torch.compile captures a program per input signature by tracing (scriptc/compiler), so a
mark that a dim is dynamic or static changes nothing: every shape gets its own program either way, and
a function allowed in the graph is traced through as any other.
"""

from __future__ import annotations

from typing import Any, Callable

from scriptc.compiler import disable, is_compiling, list_backends, reset  # noqa: F401
from scriptc.compiler import capture

from . import utils  # noqa: F401  (torch._dynamo.utils, reachable once torch._dynamo is)

__all__ = ["reset", "config", "disable", "is_compiling", "list_backends", "mark_dynamic", "mark_static",
           "allow_in_graph"]


class _Config:
    """torch._dynamo.config: `recompile_limit` (alias `cache_size_limit`, 8) is how many input signatures
    a compiled function gets programs for before later ones run eagerly; other settings are kept as set
    (suppress_errors: scriptc runs what it cannot capture eagerly already)."""

    def __init__(self):
        self.suppress_errors = False
        self.verbose = False

    @property
    def recompile_limit(self) -> int:
        return capture.RECOMPILE_LIMIT

    @recompile_limit.setter
    def recompile_limit(self, value: int) -> None:
        capture.RECOMPILE_LIMIT = int(value)

    cache_size_limit = recompile_limit


config = _Config()


def _check_dims(t: Any, index, what: str) -> None:
    dims = [] if index is None else [index] if isinstance(index, int) else list(index)
    for dim in dims:
        if not -t.dim() <= dim < t.dim():
            raise IndexError(f"{what}: dim {dim} is out of range for a tensor with {t.dim()} dims")


def mark_dynamic(t: Any, index, *, hint_override: int | None = None, min: int | None = None,
                 max: int | None = None, specialize_on: list | None = None) -> None:
    """Say dim(s) `index` of t vary between calls (scriptc compiles each shape it sees either way)."""
    _check_dims(t, index, "mark_dynamic")


def mark_static(t: Any, index=None) -> None:
    """Say dim(s) `index` of t (all when None) keep their size (scriptc compiles each shape it sees)."""
    _check_dims(t, index, "mark_static")


def allow_in_graph(fn: Callable) -> Callable:
    """fn, to be kept in the captured graph (scriptc traces through every call); returns fn."""
    return fn
