"""What a traced method's input dims must satisfy beyond their types, and the typed refusals.

jit.trace bakes some input dims in (a split into that many parts, a loop over each index): a call at
another size there is refused naming what baked it (BakedDim, stored in the archive's signature as
"baked_dims"). Dims it names by one symbol (`B`, `S1`) had one size at trace time, and the graph
counts on them being equal (a concatenation's size, a buffer shared by both): a call where they
differ is refused naming both inputs. The traced module, the optimized module and runtime.load's
models raise the same SignatureError for each.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from scriptc.errors import ArchiveError, SignatureError
from scriptc.types import OptionalType, TensorType

# The longest reason an archive may give for a baked dim (a message, not data).
MAX_REASON = 1000


@dataclass(frozen=True)
class BakedDim:
    """Dim `dim` of input `position` is `size` in every call of the trace: `why` baked it in."""
    position: int
    dim: int
    size: int
    why: str

    def to_json(self) -> dict:
        return {"input": self.position, "dim": self.dim, "size": self.size, "why": self.why}

    def misfit(self, method: str, name: str, got: int) -> SignatureError:
        return SignatureError(method, name, f"size {self.size} in dim {self.dim}, which the trace baked in "
                              f"({self.why}; trace it at this size, or script it to keep the size dynamic)",
                              f"size {got}")


def baked_dims_of(signature: dict, method: str, count: int) -> tuple:
    """The method's "baked_dims" entry of an archive's manifest (() when absent), checked: each an
    input position below `count`, a dim, a size and the reason."""
    entries = signature.get("baked_dims", [])
    where = f"manifest.json: methods.{method}.baked_dims"
    if not isinstance(entries, list):
        raise ArchiveError(f"{where}: expected a list, got {type(entries).__name__}")
    baked = []
    for i, entry in enumerate(entries):
        fields = (entry.get("input"), entry.get("dim"), entry.get("size"), entry.get("why")) \
            if isinstance(entry, dict) else None
        if fields is None or set(entry) != {"input", "dim", "size", "why"} or \
                not all(type(n) is int and n >= 0 for n in fields[:3]) or fields[0] >= count or \
                not isinstance(fields[3], str) or len(fields[3]) > MAX_REASON:
            raise ArchiveError(f"{where}[{i}]: expected {{input: an input's position below {count}, dim, size, "
                               f"why: a reason}}, got {entry!r}")
        baked.append(BakedDim(*fields))
    return tuple(baked)


def check_baked_dims(baked: tuple, names: list, args: list, method: str) -> None:
    """The SignatureError of the first input whose size differs where the trace baked one in, before
    the graph computes something else than the traced code would at that size."""
    for entry in baked:
        shape = _shape_of(args[entry.position]) if entry.position < len(args) else None
        if shape is not None and len(shape) > entry.dim and shape[entry.dim] != entry.size:
            raise entry.misfit(method, names[entry.position], shape[entry.dim])


def _shape_of(value) -> tuple | None:
    """The shape of a tensor, array or nested list of numbers passed for a tensor input (None: no
    shape, a ragged list)."""
    if isinstance(value, (list, tuple)):
        try:
            return np.shape(value)
        except ValueError:
            return None
    return getattr(value, "shape", None)


def shared_dims(types: list) -> tuple:
    """(symbol, ((position, dim), ...)) for each dim symbol that more than one dim of these input
    types names."""
    places: dict[str, list] = {}
    for position, t in enumerate(types):
        t = t.elem if isinstance(t, OptionalType) else t
        if isinstance(t, TensorType) and t.shape is not None:
            for dim, size in enumerate(t.shape):
                if isinstance(size, str):
                    places.setdefault(size, []).append((position, dim))
    return tuple((symbol, tuple(dims)) for symbol, dims in places.items() if len(dims) > 1)


def check_shared_dims(groups: tuple, names: list, args: list, method: str) -> None:
    """A SignatureError where two dims the trace named by one symbol differ in this call."""
    for symbol, dims in groups:
        first = None
        for position, dim in dims:
            shape = _shape_of(args[position]) if position < len(args) else None
            if shape is None or len(shape) <= dim:
                continue
            if first is None:
                first = position, dim, shape[dim]
            elif shape[dim] != first[2]:
                raise SignatureError(method, names[position], f"size {first[2]} in dim {dim}, the size of input "
                                     f"'{names[first[0]]}' in dim {first[1]} (the trace saw them equal and named both "
                                     f"{symbol}; trace it with inputs that differ there to keep them apart)",
                                     f"size {shape[dim]}")


# graph -> (its inputs after `self`: their names, their shared dims), worked out at a graph's first call
_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def check_input_dims(baked: tuple, graph, skip: int, args: list, method: str) -> None:
    """check_baked_dims and check_shared_dims for a call of `graph` whose inputs after the first
    `skip` (`self`) take `args`, named as the graph names them."""
    layout = _LAYOUTS.get(graph)
    if layout is None or layout[0] != skip:
        inputs = graph.inputs[skip:]
        layout = _LAYOUTS[graph] = (skip, [v.name or f"input{i}" for i, v in enumerate(inputs)],
                                    shared_dims([v.type for v in inputs]))
    _, names, shared = layout
    if baked:
        check_baked_dims(baked, names, args, method)
    if shared:
        check_shared_dims(shared, names, args, method)
