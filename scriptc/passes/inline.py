"""inline: replace prim::Call of compiled helper functions with their bodies."""

from __future__ import annotations

from scriptc.ir.graph import Graph, clone_node, walk


def inline(graph: Graph, functions: dict | None = None) -> bool:
    """Inline every prim::Call whose target is a Graph in `functions` (recursively); returns changed."""
    functions = functions or {}
    changed = False
    while True:
        calls = [n for n in walk(graph.block) if n.op == "prim::Call" and isinstance(
            functions.get(n.attrs["function"]), Graph)]
        if not calls:
            return changed
        for call in calls:
            _inline_call(call, functions[call.attrs["function"]])
        changed = True


def _inline_call(call, callee: Graph) -> None:
    mapping = {p: a for p, a in zip(callee.inputs, call.inputs)}
    for node in callee.block:
        clone = clone_node(node, mapping)
        clone.insert_before(call)
    for out, ret in zip(call.outputs, callee.outputs):
        out.replace_all_uses_with(mapping.get(ret, ret))
    call.erase()
