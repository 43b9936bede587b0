"""plan_memory: liveness over the top block; which outputs may be written into a dead input's buffer,
and which values may share one buffer slot (the executor keeps one array per slot and shape)."""

from __future__ import annotations

from scriptc.ir.graph import Graph, Node
from scriptc.types import TensorType

from .analysis import is_constant, op_of


def _last_uses(graph: Graph) -> dict[int, int]:
    """For each value used in the top block: the position of its last use (nested uses count at their
    enclosing top-level node; returned values live to the end)."""
    position = {}
    last: dict[int, int] = {}
    nodes = list(graph.block)
    for i, node in enumerate(nodes):
        position[id(node)] = i
    end = len(nodes)
    for v in graph.outputs:
        last[id(v)] = end
    for i, node in enumerate(nodes):
        for v in _all_inputs(node):
            last[id(v)] = max(last.get(id(v), -1), i)
    return last


def _all_inputs(node: Node):
    yield from node.inputs
    for b in node.blocks:
        for inner in b:
            yield from _all_inputs(inner)
        yield from b.returns


def _owned(v) -> bool:
    """A buffer the graph allocated itself (not an input, a constant, an attribute or a view)."""
    node = v.node
    if node is None or is_constant(v) or node.op in ("prim::GetAttr", "prim::ListUnpack", "prim::TupleUnpack"):
        return False
    op = op_of(node)
    if op is not None and op.view:
        return False
    return isinstance(v.type, TensorType)


def plan_memory(graph: Graph) -> bool:
    """Annotate FusionGroups with `inplace` (an input index whose buffer the first output may reuse)
    and every top-level tensor output with a `slots` entry (values with disjoint lifetimes share one)."""
    last = _last_uses(graph)
    nodes = list(graph.block)
    free: list[tuple[str, int]] = []
    slot_of: dict[int, int] = {}
    slot_kind: dict[int, str] = {}
    next_slot = 0
    changed = False
    for i, node in enumerate(nodes):
        if node.op == "prim::FusionGroup" and node.outputs:
            out = node.outputs[0]
            for j, v in enumerate(node.inputs):
                if _owned(v) and last.get(id(v), -1) == i and v.type == out.type and \
                        id(v) not in [id(x) for x in node.inputs[:j]]:
                    node.attrs["inplace"] = j
                    changed = True
                    break
        slots = []
        for out in node.outputs:
            if not _owned(out) or node.blocks and node.op != "prim::FusionGroup":
                slots.append(-1)
                continue
            kind = str(out.type)
            reuse = next((k for k, (t, s) in enumerate(free) if t == kind), None)
            if reuse is not None:
                slot = free.pop(reuse)[1]
            else:
                slot, next_slot = next_slot, next_slot + 1
            slot_of[id(out)] = slot
            slot_kind[slot] = kind
            slots.append(slot)
        if any(s >= 0 for s in slots) and node.op == "prim::FusionGroup":
            node.attrs["slots"] = slots
            changed = True
        for v in set(id(x) for x in _all_inputs(node)):
            if last.get(v) == i and v in slot_of:
                free.append((slot_kind[slot_of[v]], slot_of.pop(v)))
    return changed
