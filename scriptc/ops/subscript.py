"""Tensor indexing as ops: `x[2, 1:-1, None, ..., mask]` becomes select / slice / unsqueeze views and
one `index` (reading) or `index_put_` (writing) for the tensor indices.

Eager tensors (tensors/indexing.py) and scripted code (jit/frontend) lower an index through this one routine:
eager passes an `apply` that runs each op at once, the script compiler one that emits it into the
graph. Items after an ellipsis are addressed from the end (negative dims), so a scripted tensor of
unknown rank indexes the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

INT, SLICE, NEWAXIS, ELLIPSIS, BOOL, TENSOR = "int", "slice", "newaxis", "ellipsis", "bool", "tensor"


@dataclass
class Item:
    """One position of an index. `value`: the int, the bool, or the index tensor (whatever the
    caller's ops take: a Tensor eagerly, an IR value in script); `start`/`stop`/`step` of a slice
    (None when absent); `dims`: how many dims a tensor index consumes (a bool mask: its rank)."""

    kind: str
    value: Any = None
    start: Any = None
    stop: Any = None
    step: Any = None
    dims: int = 1

    @property
    def full_slice(self) -> bool:
        return self.kind == SLICE and self.start is None and self.stop is None and self.step is None


def lower(apply: Callable, x, items: list[Item], rank: int | None):
    """Apply the basic items to x as views; returns (view, indices for `index`/`index_put_`: one
    per dim of the view up to the last tensor index, None where a dim is not indexed, or [])."""
    if sum(1 for i in items if i.kind == ELLIPSIS) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(i.dims for i in items if i.kind in (INT, SLICE, TENSOR))
    if rank is not None and consumed > rank:
        raise IndexError(f"too many indices for tensor of dimension {rank}")
    after: list[Item] = []
    cut = next((k for k, i in enumerate(items) if i.kind == ELLIPSIS), None)
    if cut is not None:
        before, after = items[:cut], items[cut + 1:]
        if rank is not None:
            before, after = before + [Item(SLICE)] * (rank - consumed) + after, []
        elif any(i.kind == TENSOR for i in after):
            raise IndexError("a tensor index after '...' needs a tensor of known rank")
        items = before
    out, dim, indices = x, 0, []
    for item in items:
        out, dim = _forward(apply, out, dim, item, indices)
    trailing = 0
    for item in reversed(after):
        out, trailing = _backward(apply, out, trailing, item)
    while indices and indices[-1] is None:
        indices.pop()
    return out, indices


def _forward(apply, out, dim: int, item: Item, indices: list):
    kind = item.kind
    if kind == INT:
        return apply("select", (out, dim, item.value)), dim
    if kind == NEWAXIS or kind == BOOL:
        out = apply("unsqueeze", (out, dim))
        if kind == BOOL and not item.value:
            out = apply("slice", (out, dim, 0, 0, 1))
        indices.append(None)
        return out, dim + 1
    if kind == SLICE:
        if not item.full_slice:
            out = apply("slice", (out, dim, item.start, item.stop, 1 if item.step is None else item.step))
        indices.append(None)
        return out, dim + 1
    indices.append(item.value)
    indices.extend([None] * (item.dims - 1))
    return out, dim + item.dims


def _backward(apply, out, trailing: int, item: Item):
    """An item after the ellipsis, `trailing` dims of the view already taken by the items after it."""
    dim = -(trailing + 1)
    kind = item.kind
    if kind == INT:
        return apply("select", (out, dim, item.value)), trailing
    if kind == NEWAXIS or kind == BOOL:
        out = apply("unsqueeze", (out, dim))
        if kind == BOOL and not item.value:
            out = apply("slice", (out, dim, 0, 0, 1))
        return out, trailing + 1
    if not item.full_slice:
        out = apply("slice", (out, dim, item.start, item.stop, 1 if item.step is None else item.step))
    return out, trailing + 1


def read(apply: Callable, x, items: list[Item], rank: int | None):
    """x[index]: the views, then one `index` when there are tensor indices."""
    out, indices = lower(apply, x, items, rank)
    return apply("index", (out, indices)) if indices else out


def write(apply: Callable, x, items: list[Item], rank: int | None, value) -> None:
    """x[index] = value: into the view, through `index_put_` when there are tensor indices."""
    view, indices = lower(apply, x, items, rank)
    if indices:
        apply("index_put_", (view, indices, value, False))
    else:
        apply("copy_", (view, value))
