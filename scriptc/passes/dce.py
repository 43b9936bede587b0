"""dce: drop nodes whose outputs are unused and that have no side effects; prune unused If/Loop outputs."""

from __future__ import annotations

from scriptc.ir.graph import Block, Graph, Node

from .analysis import has_side_effects


def dce(graph: Graph) -> bool:
    return _dce_block(graph.block)


def _dce_block(block: Block) -> bool:
    changed = False
    node = block.last
    while node is not None:
        prev = node.prev
        if node.op == "prim::If":
            changed |= _prune_if(node)
        elif node.op == "prim::Loop":
            changed |= _prune_loop(node)
        for b in node.blocks:
            changed |= _dce_block(b)
        if not any(o.uses for o in node.outputs) and not has_side_effects(node):
            node.erase()
            changed = True
        node = prev
    return changed


def _prune_if(node: Node) -> bool:
    changed = False
    for i in reversed(range(len(node.outputs))):
        if node.outputs[i].uses:
            continue
        for b in node.blocks:
            _drop_return(b, i)
        _drop_output(node, i)
        changed = True
    return changed


def _prune_loop(node: Node) -> bool:
    body = node.blocks[0]
    changed = False
    for i in reversed(range(len(node.outputs))):
        param = body.params[i + 1]
        param_used_elsewhere = any(not (u.user is body and u.index == i + 1) for u in param.uses)
        if node.outputs[i].uses or param_used_elsewhere:
            continue
        _drop_return(body, i + 1)
        body.params.pop(i + 1)
        for j, p in enumerate(body.params):
            p.index = j
        _drop_input(node, i + 2)
        _drop_output(node, i)
        changed = True
    return changed


def _drop_return(block: Block, index: int) -> None:
    values = list(block.returns)
    block.drop_returns()
    for j, v in enumerate(values):
        if j != index:
            block.add_return(v)


def _drop_input(node: Node, index: int) -> None:
    values = list(node.inputs)
    node.drop_inputs()
    for j, v in enumerate(values):
        if j != index:
            node.add_input(v)


def _drop_output(node: Node, index: int) -> None:
    node.outputs.pop(index)
    for j, o in enumerate(node.outputs):
        o.index = j
