"""fold_embedding_linear: a frozen linear layer applied to a frozen embedding's rows becomes one
embedding of the product table.

`linear(embedding(idx, E), W, b)` (a reshape that keeps the last dim may stand between them, as an
LSTM's input projection flattens (steps, batch, features) to rows) is `embedding(idx, E @ W^T + b)`:
each looked-up row is multiplied by the same weights whichever order it happens in. The table
(vocabulary x out) is computed once, at optimization time, and a call gathers rows instead of
multiplying them (word-LM's first LSTM layer: a 700x200x800 product per call becomes a gather).
Only where the embedding and reshape feed nothing else and the table is no larger than _MAX_TABLE
elements.
"""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Graph, Node, walk
from scriptc.types import Int, TensorType

from .analysis import constant_value, is_constant

_MAX_TABLE = 1 << 22  # elements (16 MB of float32)
# (readers of only the dtype and device, which the product table keeps: a scripted nn.LSTM's zero state)
_TYPE_READERS = ("dtype", "new_zeros", "new_ones")


def _only_use(value, user) -> bool:
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].user is user


def _sizes_besides(value, user, rank: int) -> list | None:
    """The size(value, d) nodes (d a constant dim other than the last) and _TYPE_READERS that read
    `value` besides `user`; None when something else reads it."""
    sizes = []
    for use in value.uses:
        node = use.user
        if node is user:
            continue
        if isinstance(node, Node) and node.op in _TYPE_READERS and use.index == 0:
            sizes.append(node)
            continue
        if (not isinstance(node, Node) or node.op != "size" or len(node.inputs) != 2 or use.index != 0
                or not is_constant(node.inputs[1])):
            return None
        dim = constant_value(node.inputs[1])
        if not isinstance(dim, int) or not (0 <= dim < rank - 1 or -rank <= dim < -1):
            return None
        sizes.append(node)
    return sizes


def fold_embedding_linear(graph: Graph) -> bool:
    changed = False
    for linear in list(walk(graph.block)):
        if linear.op != "linear" or linear.owner is None or not is_constant(linear.inputs[1]):
            continue
        weight = constant_value(linear.inputs[1])
        bias = constant_value(linear.inputs[2]) if len(linear.inputs) > 2 and is_constant(linear.inputs[2]) else None
        if len(linear.inputs) > 2 and not is_constant(linear.inputs[2]):
            continue
        if not isinstance(weight, np.ndarray) or weight.ndim != 2 or weight.dtype != np.float32:
            continue
        if bias is not None and (not isinstance(bias, np.ndarray) or bias.shape != (weight.shape[0],)
                                 or bias.dtype != weight.dtype):
            continue
        x, reshape = linear.inputs[0], None
        if x.node is not None and x.node.op == "reshape" and _only_use(x, linear):
            reshape = x.node
            shape = reshape.inputs[1].node
            if (shape is None or shape.op != "prim::ListConstruct" or not shape.inputs
                    or not is_constant(shape.inputs[-1]) or constant_value(shape.inputs[-1]) != weight.shape[1]
                    or not _only_use(reshape.inputs[1], reshape)):
                continue
            x = reshape.inputs[0]
        emb = x.node
        if emb is None or emb.op != "embedding" or emb.owner is not linear.owner:
            continue
        rank = len(emb.output.type.shape) if isinstance(emb.output.type, TensorType) and emb.output.type.shape else 0
        sizes = _sizes_besides(x, reshape or linear, rank)
        if sizes is None or len(list(x.uses)) != len(sizes) + 1:
            continue
        if not is_constant(emb.inputs[1]) or not _only_use(emb.inputs[1], emb):
            continue  # (a weight something else reads, or an embedding_renorm_ rescales, stays as it is)
        table_in = constant_value(emb.inputs[1])
        out_type, emb_type = linear.output.type, emb.output.type
        if (not isinstance(table_in, np.ndarray) or table_in.ndim != 2 or table_in.dtype != weight.dtype
                or table_in.shape[1] != weight.shape[1] or table_in.shape[0] * weight.shape[0] > _MAX_TABLE
                or not isinstance(out_type, TensorType) or not isinstance(emb_type, TensorType)
                or emb_type.shape is None):
            continue
        table = table_in.astype(np.float64) @ weight.T.astype(np.float64)
        if bias is not None:
            table += bias
        table = np.ascontiguousarray(table.astype(weight.dtype))
        w_type = linear.inputs[1].type
        t_type = TensorType(w_type.dtype if isinstance(w_type, TensorType) else None, table.shape)
        t_node = Node("prim::Constant", [], [t_type], {"value": table}, linear.loc)
        new_type = TensorType(emb_type.dtype, tuple(emb_type.shape[:-1]) + (weight.shape[0],), emb_type.device)
        new_emb = Node("embedding", [emb.inputs[0], t_node.output, *emb.inputs[2:]], [new_type], None, emb.loc)
        t_node.insert_before(emb)  # (before the old one: its size() readers move to the new one)
        new_emb.insert_before(emb)
        result = new_emb.output
        if reshape is not None:
            shape = reshape.inputs[1].node
            out_dim = Node("prim::Constant", [], [Int], {"value": int(weight.shape[0])}, linear.loc)
            new_shape = Node("prim::ListConstruct", [*shape.inputs[:-1], out_dim.output], [shape.output.type], None,
                             shape.loc)
            new_reshape = Node("reshape", [result, new_shape.output], [out_type], None, reshape.loc)
            for node in (out_dim, new_shape, new_reshape):
                node.insert_before(linear)
            result = new_reshape.output
        for size in sizes:  # (the dims before the last are the old embedding's)
            size.set_input(0, new_emb.output)
        linear.output.replace_all_uses_with(result)
        linear.erase()
        changed = True
    return changed
