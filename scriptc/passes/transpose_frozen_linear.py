"""transpose_frozen_linear: `linear(x, W, b)` with a frozen 2-D weight becomes `matmul(x, W^T) + b`.

The transposed weight is stored contiguous once, at optimization time. BLAS multiplies by a
row-major (in, out) matrix 15-35% faster than by the transpose view of an (out, in) one (measured on
OpenBLAS for the 784-512-512-10 MLP), and the bias add becomes an ordinary pointwise op that fuses
into the following activation's kernel instead of a separate pass over the output. TorchScript's
freezing does the same (its frozen_linear_transpose pass).
"""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Graph, Node, walk
from scriptc.types import Int, TensorType

from .analysis import constant_value, is_constant


def transpose_frozen_linear(graph: Graph) -> bool:
    changed = False
    # One transpose per weight: an unrolled (traced) recurrence applies one weight at every step, and
    # a copy per step made the 35-step word-LM LSTM stream 22 MB of weights a layer from memory.
    transposes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for linear in list(walk(graph.block)):
        if linear.op != "linear" or linear.owner is None or not is_constant(linear.inputs[1]):
            continue
        weight = constant_value(linear.inputs[1])
        has_bias = len(linear.inputs) > 2 and not (is_constant(linear.inputs[2]) and constant_value(linear.inputs[2])
                                                   is None)
        if not isinstance(weight, np.ndarray) or weight.ndim != 2 or not isinstance(linear.output.type, TensorType):
            continue
        out_type = linear.output.type
        if id(weight) not in transposes:  # (the weight kept with it: its id stays its own)
            transposes[id(weight)] = (weight, np.ascontiguousarray(weight.T))
        transposed = transposes[id(weight)][1]
        w_type = linear.inputs[1].type
        w_type = TensorType(w_type.dtype, tuple(reversed(w_type.shape)), w_type.device) if isinstance(
            w_type, TensorType) and w_type.shape is not None else w_type
        w_node = Node("prim::Constant", [], [w_type], {"value": transposed}, linear.loc)
        matmul = Node("matmul", [linear.inputs[0], w_node.output], [out_type], None, linear.loc)
        w_node.insert_before(linear)
        matmul.insert_before(linear)
        result = matmul.output
        if has_bias:
            alpha = Node("prim::Constant", [], [Int], {"value": 1}, linear.loc)
            add = Node("add", [matmul.output, linear.inputs[2], alpha.output], [out_type], None, linear.loc)
            alpha.insert_before(linear)
            add.insert_before(linear)
            result = add.output
        linear.output.replace_all_uses_with(result)
        linear.erase()
        changed = True
    return changed
