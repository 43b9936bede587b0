"""constant_fold: evaluate pure ops on constants; take constant branches; unroll short constant loops."""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Block, Graph, Node, clone_node, walk
from scriptc.ops.execute import run_kernel
from scriptc.types import TensorType, type_of_constant

from .analysis import LIST_READERS, constant_value, is_constant, is_pure, mutated_values, op_of, read_only_list, written_later

MAX_UNROLL = 8           # loops with a constant trip count up to this many are unrolled
MAX_FOLDED_ELEMENTS = 1 << 22  # don't materialize huge constant tensors


MAX_ROUNDS = 8  # passes over the graph: a loop unrolled or a branch taken in one leaves constants for the next


def constant_fold(graph: Graph) -> bool:
    changed = False
    for _ in range(MAX_ROUNDS):
        if not _fold_round(graph):
            break
        changed = True
    return changed


def _fold_round(graph: Graph) -> bool:
    changed = False
    for node in list(walk(graph.block)):
        if node.owner is None:
            continue  # removed when an enclosing branch was folded
        if node.op == "prim::If" and is_constant(node.inputs[0]):
            _take_branch(node, bool(constant_value(node.inputs[0])))
            changed = True
        elif node.op == "prim::Loop" and _unrollable(node):
            _unroll(node)
            changed = True
        elif _foldable(node):
            changed |= _fold(node)
        elif node.op in ("prim::ListConstruct", "prim::TupleConstruct") and _read_only_constant_list(node):
            # (A tuple of ints that only ops read - nn's _pair(stride) in a scripted module - is the
            # int list a trace records: as a constant, conv2d's arguments are known to fusion.)
            _replace_with_constant(node, [constant_value(v) for v in node.inputs])
            changed = True
        elif node.op in ("size", "dim") and _shape_fact(node) is not None:
            _replace_with_constant(node, _shape_fact(node))
            changed = True
    return changed


def _read_only_constant_list(node: Node) -> bool:
    """A list (or tuple) of constants that only op arguments read (never appended to, returned or
    stored)."""
    if not node.inputs or not all(is_constant(v) and isinstance(constant_value(v), (int, float, bool))
                                  for v in node.inputs):
        return False
    for use in node.output.uses:
        user = use.user
        if not isinstance(user, Node) or user.op.startswith("prim::") or node.output in mutated_values(user):
            return False
    return True


def _shape_fact(node: Node):
    """dim(x) when x's rank is known; size(x, d) when that dim is a concrete int in x's type."""
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    if node.op == "dim":
        return len(t.shape)
    d = node.inputs[1]
    if not is_constant(d) or not isinstance(constant_value(d), int):
        return None
    index = constant_value(d)
    if not -len(t.shape) <= index < len(t.shape):
        return None
    size = t.shape[index]
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def _replace_with_constant(node: Node, value) -> None:
    const = Node("prim::Constant", [], [type_of_constant(value)], {"value": value}, node.loc)
    const.insert_before(node)
    node.output.replace_all_uses_with(const.output)
    node.erase()


def _foldable(node: Node) -> bool:
    if not node.inputs or not all(is_constant(v) for v in node.inputs):
        return False
    if any(isinstance(v.type, TensorType) and written_later(v) for v in node.inputs):
        return False  # a tensor written through some view of it (a traced KV cache) changes between calls
    if node.op in ("prim::TupleIndex", "prim::TupleUnpack", "prim::ListUnpack", "prim::IsNone", "prim::Refine"):
        return True
    if node.op in LIST_READERS:  # (a constant list nothing changes: a frozen _flat_weights)
        return read_only_list(node.inputs[0]) and (node.op != "slice.list" or read_only_list(node.output))
    op = op_of(node)
    return op is not None and is_pure(node) and op.kind != "random"


def _fold(node: Node) -> bool:
    args = [constant_value(v) for v in node.inputs]
    op = op_of(node)
    try:
        if node.op == "prim::TupleIndex":
            results = [args[0][node.attrs["index"]]]
        elif node.op in ("prim::TupleUnpack", "prim::ListUnpack"):
            results = list(args[0])
        elif node.op == "prim::IsNone":
            results = [args[0] is None]
        elif node.op == "prim::Refine":
            results = [args[0]]
        else:
            out = run_kernel(op, np, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
            if op.aux:
                out = out[0]
            results = list(out) if isinstance(out, tuple) else [out]
            if len(node.outputs) == 1 and len(results) != 1:
                results = [results]
    except Exception:
        return False  # it fails at run time too: leave the error to run time
    if len(results) != len(node.outputs):
        return False
    if any(isinstance(out.type, TensorType) and written_later(out) for out in node.outputs):
        return False
    for out, value in zip(node.outputs, results):
        if isinstance(out.type, TensorType) and not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if isinstance(value, np.ndarray) and value.size > MAX_FOLDED_ELEMENTS:
            return False
        if isinstance(value, (np.generic,)):
            value = value.item()
    if any(isinstance(out.type, TensorType) and written_later(out) for out in node.outputs):
        return False
    for out, value in zip(node.outputs, results):
        if isinstance(out.type, TensorType) and not isinstance(value, np.ndarray):
            value = np.asarray(value)
        t = out.type if isinstance(value, np.ndarray) else _python_type(value, out.type)
        const = Node("prim::Constant", [], [t], {"value": value}, node.loc)
        const.insert_before(node)
        out.replace_all_uses_with(const.output)
    node.erase()
    return True


def _python_type(value, declared):
    try:
        return type_of_constant(value)
    except TypeError:
        return declared


def _take_branch(node: Node, condition: bool) -> None:
    block = node.blocks[0 if condition else 1]
    _splice(block, node, {})


def _splice(block: Block, anchor: Node, mapping: dict) -> None:
    """Move block's nodes before anchor and let anchor's outputs be the block's returns."""
    for inner in list(block):
        inner.insert_before(anchor)
    for out, ret in zip(anchor.outputs, block.returns):
        out.replace_all_uses_with(mapping.get(ret, ret))
    anchor.erase()


def _unrollable(node: Node) -> bool:
    trip, cond = node.inputs[0], node.inputs[1]
    if not (is_constant(trip) and is_constant(cond)) or not constant_value(cond):
        return False
    body = node.blocks[0]
    if not (is_constant(body.returns[0]) and constant_value(body.returns[0]) is True):
        return False
    return 0 <= int(constant_value(trip)) <= MAX_UNROLL


def _unroll(node: Node) -> None:
    trip = int(constant_value(node.inputs[0]))
    body = node.blocks[0]
    carried = list(node.inputs[2:])
    for i in range(trip):
        index = Node("prim::Constant", [], [type_of_constant(i)], {"value": i}, node.loc)
        index.insert_before(node)
        mapping = {body.params[0]: index.output}
        mapping.update(zip(body.params[1:], carried))
        for inner in body:
            clone_node(inner, mapping).insert_before(node)
        carried = [mapping.get(r, r) for r in body.returns[1:]]
    for out, value in zip(node.outputs, carried):
        out.replace_all_uses_with(value)
    node.erase()
