"""sink_embedding: an If that picks between row views of one embedding becomes the embedding of an
If that picks between the same views of its indices.

A scripted nn.LSTM unsqueezes its input where it is unbatched: `If(c){unsqueeze(e, 1)} else {e}`
for e = embedding(idx, E) (refine_ranks gives each branch its rank). An unsqueeze before the last
dim moves whole rows, so it is the embedding of the unsqueezed indices, and an If of embeddings of
one table is the embedding of the If of their indices: the LSTM's input comes out of one embedding
again, which fold_embedding_linear folds with the first layer's input projection.
dim(embedding(idx, E)) becomes dim(idx) + 1, so an embedding is not computed only to be measured.
"""

from __future__ import annotations

from scriptc.ir.graph import Graph, Node, Value, walk
from scriptc.types import Int, TensorType

from .analysis import constant_value, is_constant


def sink_embedding(graph: Graph) -> bool:
    changed = False
    for node in list(walk(graph.block)):
        if node.owner is None:
            continue
        if node.op == "dim" and len(node.inputs) == 1 and _embedding(node.inputs[0]) is not None:
            _measure_indices(node)
            changed = True
        elif node.op == "prim::If":
            for k, out in enumerate(node.outputs):
                changed |= _sink_through(node, k, out)
    return changed


def _embedding(value: Value) -> Node | None:
    """The embedding of a frozen 2-D table that produces `value`, if one does."""
    node = value.node
    if node is None or node.op != "embedding" or not is_constant(node.inputs[1]):
        return None
    table = constant_value(node.inputs[1])
    return node if getattr(table, "ndim", None) == 2 else None


def _measure_indices(node: Node) -> None:
    rank = Node("dim", [node.inputs[0].node.inputs[0]], [Int], None, node.loc)
    one = Node("prim::Constant", [], [Int], {"value": 1}, node.loc)
    total = Node("add.scalar", [rank.output, one.output], [Int], None, node.loc)
    for n in (rank, one, total):
        n.insert_before(node)
    node.output.replace_all_uses_with(total.output)
    node.erase()


def _view_chain(value: Value, if_node: Node) -> tuple[Node, list[Node]] | None:
    """(the embedding outside `if_node`, the row views from it to `value`, first to last), or None
    where `value` is not such a view."""
    chain = []
    while True:
        node = value.node
        if node is None:
            return None
        if node.op == "embedding":
            return (node, chain[::-1]) if node.owner is if_node.owner and _embedding(value) is not None else None
        if node.op == "unsqueeze" and not _moves_rows(node):
            return None
        if node.op not in ("unsqueeze", "prim::Refine") or not isinstance(node.output.type, TensorType) \
                or not node.output.type.shape:
            return None
        chain.append(node)
        value = node.inputs[0]


def _moves_rows(unsqueeze: Node) -> bool:
    """unsqueeze(x, d) at a d before x's last dim (x of known rank): it moves whole rows."""
    x, d = unsqueeze.inputs
    shape = x.type.shape if isinstance(x.type, TensorType) else None
    if not shape or not is_constant(d) or type(constant_value(d)) is not int:
        return False
    dim = constant_value(d)
    dim = dim + len(shape) + 1 if dim < 0 else dim
    return 0 <= dim < len(shape)


def _sink_through(if_node: Node, k: int, out: Value) -> bool:
    found = [_view_chain(block.returns[k], if_node) for block in if_node.blocks]
    if not found or None in found or len({id(emb) for emb, _ in found}) != 1:
        return False
    emb = found[0][0]
    indices = emb.inputs[0]
    for block, (_, chain) in zip(if_node.blocks, found):
        index = indices
        for view in chain:
            index_type = TensorType(indices.type.dtype if isinstance(indices.type, TensorType) else None,
                                    view.output.type.shape[:-1])
            index_view = Node(view.op, [index, *view.inputs[1:]], [index_type], dict(view.attrs), view.loc)
            block.append(index_view)
            index = index_view.output
        block.set_return(k, index)
    rows = Node("embedding", [out, *emb.inputs[1:]], [out.type], None, emb.loc)
    rows.insert_after(if_node)
    out.replace_all_uses_with(rows.output)
    rows.set_input(0, out)  # (the one use of `out` that stays)
    out.type = TensorType(indices.type.dtype if isinstance(indices.type, TensorType) else None,
                          out.type.shape[:-1] if isinstance(out.type, TensorType) and out.type.shape else None)
    return True
