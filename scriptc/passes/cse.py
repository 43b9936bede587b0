"""cse: pure nodes computing the same op on the same inputs and attributes are computed once."""

from __future__ import annotations

from collections import ChainMap

import numpy as np

from scriptc.ir.graph import Block, Graph

from .analysis import is_pure, writes_memory, written_later


def _attr_key(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes()) if value.size <= 64 else ("array", id(value))
    if isinstance(value, list):
        return ("list",) + tuple(_attr_key(v) for v in value)
    if isinstance(value, tuple):
        return ("tuple",) + tuple(_attr_key(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _attr_key(v)) for k, v in value.items())
    if isinstance(value, float) and value != value:
        return ("nan",)
    return (type(value).__name__, value)


def cse(graph: Graph) -> bool:
    """Values seen in an enclosing block are reused inside nested blocks (they dominate them), but for
    a FusionGroup's body: it reads nothing but its params (codegen compiles it on its own)."""
    return _cse_block(graph.block, ChainMap())


def _cse_block(block: Block, seen: ChainMap) -> bool:
    changed = False
    for node in list(block):
        for b in node.blocks:
            changed |= _cse_block(b, ChainMap() if node.op == "prim::FusionGroup" else seen.new_child())
        if writes_memory(node):
            for known in seen.maps:  # x.add_(y) may change what any earlier value aliases
                known.clear()
            continue
        if not is_pure(node) or not node.outputs or _written_array(node):
            continue
        key = (node.op, tuple(id(v) for v in node.inputs), tuple((k, _attr_key(v)) for k, v in node.attrs.items()),
               tuple(str(o.type) for o in node.outputs))
        previous = seen.get(key)
        if previous is None:
            seen[key] = node
            continue
        for old, new in zip(node.outputs, previous.outputs):
            old.replace_all_uses_with(new)
        node.erase()
        changed = True
    return changed


def _written_array(node) -> bool:
    """An array constant written in place (a frozen running mean that batch_norm updates in training
    mode): it is that buffer, not its value, so another constant equal to it now (a bias of zeros) is
    not the same."""
    return node.op == "prim::Constant" and isinstance(node.attrs.get("value"), np.ndarray) and \
        written_later(node.output)
