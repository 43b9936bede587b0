"""fold_conv_bn: a frozen Conv2d or ConvTranspose2d followed by an eval-mode BatchNorm2d becomes one conv;
any other eval-mode batch_norm with frozen statistics becomes x * scale + shift, pointwise ops that fuse
with their neighbours."""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Graph, Node, walk
from scriptc.types import Int, TensorType

from .analysis import constant_value, is_constant


SHAPE_ONLY = {"dim", "size", "size.all", "numel"}


def fold_conv_bn(graph: Graph) -> bool:
    changed = False
    for bn in list(walk(graph.block)):
        if bn.op != "batch_norm" or bn.owner is None:
            continue
        conv = bn.inputs[0].node
        if conv is None or conv.op not in ("conv2d", "conv_transpose2d"):
            continue
        # Other readers may only look at the shape (BatchNorm2d's own input check does): folding keeps it.
        if any(u.user is not bn and not (isinstance(u.user, Node) and u.user.op in SHAPE_ONLY)
               for u in conv.output.uses):
            continue
        rm, rv, w, b, training, _, eps = bn.inputs[1:]
        needed = [conv.inputs[1], rm, rv, training, eps] + [v for v in (w, b, conv.inputs[2]) if not (
            is_constant(v) and constant_value(v) is None)]
        if conv.op == "conv_transpose2d":
            needed.append(conv.inputs[6])  # (its groups: the weight's dim 1 holds each group's outputs)
        if not all(is_constant(v) for v in needed) or constant_value(training) is not False:
            continue
        weight = constant_value(conv.inputs[1])
        conv_bias = constant_value(conv.inputs[2]) if is_constant(conv.inputs[2]) else None
        mean, var = constant_value(rm), constant_value(rv)
        gamma = constant_value(w) if constant_value(w) is not None else np.ones(mean.shape, weight.dtype)
        beta = constant_value(b) if constant_value(b) is not None else np.zeros(mean.shape, weight.dtype)
        scale = (gamma / np.sqrt(var.astype(np.float64) + constant_value(eps))).astype(weight.dtype)
        new_weight = _scaled_outputs(conv, weight, scale)
        base = conv_bias if conv_bias is not None else np.zeros_like(mean)
        new_bias = ((base - mean) * scale + beta).astype(weight.dtype)
        w_node = Node("prim::Constant", [], [conv.inputs[1].type], {"value": new_weight}, conv.loc)
        b_node = Node("prim::Constant", [], [rm.type], {"value": new_bias}, conv.loc)
        w_node.insert_before(conv)
        b_node.insert_before(conv)
        conv.set_input(1, w_node.output)
        conv.set_input(2, b_node.output)
        bn.output.replace_all_uses_with(conv.output)
        bn.erase()
        changed = True
    for bn in list(walk(graph.block)):
        if bn.op == "batch_norm" and bn.owner is not None:
            changed |= _affine(bn)
    return changed


def _scaled_outputs(conv: Node, weight: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """`weight` with each output channel's part times its scale: dim 0 of a conv2d's, each group's
    slice of dim 1 of a conv_transpose2d's (in, out / groups, kh, kw)."""
    if conv.op == "conv2d":
        return (weight * scale.reshape(-1, 1, 1, 1)).astype(weight.dtype)
    groups = constant_value(conv.inputs[6])
    grouped = weight.reshape((groups, -1) + weight.shape[1:])
    return (grouped * scale.reshape(groups, 1, -1, 1, 1)).reshape(weight.shape).astype(weight.dtype)


def _affine(bn: Node) -> bool:
    """An eval-mode batch_norm whose statistics, weight, bias and eps are constants, of an input of known
    rank and float dtype: x * scale + shift, scale and shift shaped to broadcast along dim 1."""
    x = bn.inputs[0]
    rm, rv, w, b, training, _, eps = bn.inputs[1:]
    t = x.type
    if not all(is_constant(v) for v in (rm, rv, w, b, training, eps)) or constant_value(training) is not False or \
            not isinstance(t, TensorType) or t.shape is None or len(t.shape) < 2 or t.dtype is None or \
            not t.dtype.is_floating_point:
        return False
    mean, var = constant_value(rm), constant_value(rv)
    if not isinstance(mean, np.ndarray) or not isinstance(var, np.ndarray):
        return False
    dtype = t.dtype.np
    gamma = constant_value(w) if constant_value(w) is not None else np.ones(mean.shape, dtype)
    beta = constant_value(b) if constant_value(b) is not None else np.zeros(mean.shape, dtype)
    scale = gamma / np.sqrt(var.astype(np.float64) + constant_value(eps))
    shift = beta - mean * scale
    shape = (-1,) + (1,) * (len(t.shape) - 2)
    result = x
    for op, value in (("mul", scale), ("add", shift)):
        array = np.ascontiguousarray(value.reshape(shape), dtype=dtype)
        const = Node("prim::Constant", [], [TensorType(t.dtype, array.shape, t.device)], {"value": array}, bn.loc)
        const.insert_before(bn)
        inputs = [result, const.output]
        if op == "add":
            alpha = Node("prim::Constant", [], [Int], {"value": 1}, bn.loc)
            alpha.insert_before(bn)
            inputs.append(alpha.output)
        node = Node(op, inputs, [bn.output.type], None, bn.loc)
        node.insert_before(bn)
        result = node.output
    bn.output.replace_all_uses_with(result)
    bn.erase()
    return True
