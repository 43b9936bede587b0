"""shape_infer: propagate dtypes and shapes (with symbolic dims) through every op's table rule."""

from __future__ import annotations

import itertools
import math

import numpy as np

from scriptc.ir.graph import Block, Graph, Node, Value
from scriptc.ops.rules import Unknown
from scriptc.types import ListType, TensorType, TupleType, Type, from_numpy_dtype

from .analysis import constant_value, is_constant, op_of, unchanged_list


def merge_types(old: Type, new) -> Type:
    """The more precise of two types for one value: new's facts, old's where new knows less."""
    if not isinstance(new, TensorType) or not isinstance(old, TensorType):
        return old if not isinstance(new, Type) else (new if not isinstance(old, TensorType) else old)
    # A rule handed a dtype known only at run time (`x.to(y.dtype)`) gives it back as Unknown.
    known_dtype = new.dtype if new.dtype is not None and not isinstance(new.dtype, Unknown) else old.dtype
    if new.shape is None:
        shape = old.shape
    elif old.shape is None or len(old.shape) != len(new.shape):
        shape = new.shape
    else:
        shape = tuple(n if n is not None else o for n, o in zip(new.shape, old.shape))
    return TensorType(known_dtype, shape, new.device if new.device != "cpu" else old.device)


_MAX_RANK = 6  # (the ranks the rank analyses below try an op's rule at)
_MAX_COMBINATIONS = 256  # (of its inputs' metas, _of_rank's at each rank, that possible_ranks tries an op's rule at)


class _ShapeState:
    def __init__(self):
        self.dims: dict[int, object] = {}  # int Values known to equal a (symbolic) dim

    def meta(self, v: Value):
        if is_constant(v):
            value = constant_value(v)
            if isinstance(value, np.ndarray):
                return TensorType(from_numpy_dtype(value.dtype), tuple(value.shape))
            return value
        if isinstance(v.type, TensorType):
            return v.type
        if id(v) in self.dims:
            return self.dims[id(v)]
        if v.node is not None and v.node.op == "prim::ListConstruct" and unchanged_list(v):
            return [self.meta(x) for x in v.node.inputs]
        return Unknown(v.type)


def shape_infer(graph: Graph) -> bool:
    state = _ShapeState()
    return _infer_block(graph.block, state)


def _set(v: Value, t) -> bool:
    if not isinstance(t, Type):
        return False
    merged = merge_types(v.type, t)
    if merged != v.type:
        v.type = merged
        return True
    return False


def _infer_block(block: Block, state: _ShapeState) -> bool:
    changed = False
    for node in block:
        changed |= _infer_node(node, state)
    return changed


def _infer_node(node: Node, state: _ShapeState) -> bool:
    op = node.op
    if op == "prim::Constant":
        value = node.attrs["value"]
        if isinstance(value, np.ndarray):
            return _set(node.output, TensorType(from_numpy_dtype(value.dtype), tuple(value.shape)))
        return False
    if op == "prim::If":
        changed = _infer_block(node.blocks[0], state) | _infer_block(node.blocks[1], state)
        for i, out in enumerate(node.outputs):
            a, b = node.blocks[0].returns[i].type, node.blocks[1].returns[i].type
            changed |= _set(out, _join(a, b))
        return changed
    if op == "prim::Loop":
        body = node.blocks[0]
        changed = False
        for p, v in zip(body.params[1:], node.inputs[2:]):
            changed |= _set(p, v.type)
        changed |= _infer_block(body, state)
        for p, r in zip(body.params[1:], body.returns[1:]):
            joined = _join(p.type, r.type)
            if joined != p.type:
                p.type = joined
                changed = True
                _infer_block(body, state)
        for out, p in zip(node.outputs, body.params[1:]):
            changed |= _set(out, p.type)
        return changed
    if op == "prim::With":
        changed = _infer_block(node.blocks[0], state) | _infer_block(node.blocks[1], state)
        for out, r in zip(node.outputs, node.blocks[0].returns):
            changed |= _set(out, r.type)
        return changed
    if op == "prim::FusionGroup":
        body = node.blocks[0]
        changed = False
        for p, v in zip(body.params, node.inputs):
            changed |= _set(p, v.type)
        changed |= _infer_block(body, state)
        for out, r in zip(node.outputs, body.returns):
            changed |= _set(out, r.type)
        return changed
    if op == "prim::TupleConstruct":
        return _set(node.output, TupleType(tuple(v.type for v in node.inputs)))
    if op == "prim::TupleUnpack" and isinstance(node.inputs[0].type, TupleType):
        return any([_set(o, t) for o, t in zip(node.outputs, node.inputs[0].type.elems)])
    if op == "prim::Refine" and isinstance(node.output.type, TensorType):
        return _set(node.output, node.inputs[0].type if isinstance(node.inputs[0].type, TensorType) else node.output.type)
    definition = op_of(node)
    if definition is None:
        return False
    metas = [state.meta(v) for v in node.inputs]
    try:
        result = definition.shape(*metas)
    except Exception:
        return False  # the rule cannot say (or the program fails at run time): keep what is known
    if definition.name == "size" and isinstance(metas[0], TensorType) and metas[0].shape is not None and \
            isinstance(metas[1], int):
        rank = len(metas[0].shape)
        if -rank <= metas[1] < rank:
            dim = metas[0].shape[metas[1]]
            if dim is not None:
                state.dims[id(node.output)] = dim
    if len(node.outputs) == 1 and isinstance(node.outputs[0].type, ListType):
        # a rule's tuple for a Tensor[] output types its pieces, not the list: one piece (where(cond) of a
        # 1-d condition, a split into one) is no Tensor output (torchvision's postprocess_detections)
        return False
    if len(node.outputs) == 1:
        return _set(node.outputs[0], result) if isinstance(result, Type) and not (
            isinstance(node.outputs[0].type, TensorType) and not isinstance(result, TensorType)) else False
    if isinstance(result, (tuple, list)) and len(result) == len(node.outputs):
        return any([_set(o, t) for o, t in zip(node.outputs, result)])
    return False


def keeps_rank(node: Node) -> bool:
    """Whether `node`'s tensor output has the rank of its first input whatever that rank is, by its op's
    table rule run at every rank with every dim unknown or 1 (_of_rank; a rank the rule refuses is one where the op
    itself fails first). conv2d and batch_norm keep rank: a scripted module's `input.dim()` check
    after them can read their input instead, and so no longer keeps their result out of a fusion."""
    results = _first_input_results(node, range(_MAX_RANK + 1)) if len(node.outputs) == 1 else None
    if results is None:
        return False
    accepted = 0
    for rank, at_rank in results.items():
        taken = [result for result in at_rank if result is not _REFUSED]
        if any(not isinstance(result, TensorType) or result.shape is None or len(result.shape) != rank
               for result in taken):
            return False
        accepted += bool(taken)
    return accepted >= 2


def accepts_every_rank(node: Node) -> bool:
    """Whether `node`'s table rule accepts its first input at every rank that input can have
    (possible_ranks, or any rank where that is not known): where it does, removing the node cannot
    hide an error the op raises for a rank (dropout1d refuses 4-D input, in eval too)."""
    ranks = possible_ranks(node.inputs[0]) if node.inputs else None
    results = _first_input_results(node, range(_MAX_RANK + 1) if ranks is None else sorted(ranks))
    return results is not None and all(result is not _REFUSED for at_rank in results.values() for result in at_rank)


_REFUSED = object()  # (what _first_input_results holds where the rule refuses the input)


def _first_input_results(node: Node, ranks) -> dict[int, list] | None:
    """{rank: results of `node`'s table rule with its first input at that rank (_of_rank's metas), its
    other inputs as they are; _REFUSED where the rule refuses}, or None where `node` has no table rule
    or no tensor first input."""
    definition = op_of(node)
    first = node.inputs[0].type if node.inputs else None
    if definition is None or not isinstance(first, TensorType):
        return None
    state = _ShapeState()
    others = [state.meta(v) for v in node.inputs[1:]]
    results = {}
    for rank in ranks:
        results[rank] = []
        for meta in _of_rank(first.dtype, rank):
            try:
                results[rank].append(definition.shape(meta, *others))
            except Exception:
                results[rank].append(_REFUSED)  # (the op refuses these dims)
    return results


def _of_rank(dtype, rank: int) -> tuple[TensorType, TensorType]:
    """The metas a rank analysis tries an op's rule at for an input of `rank`: every dim unknown, and
    every dim 1 - a rule reads an unknown dim as not 1, and squeeze(x, 0) drops a dim of 1."""
    return TensorType(dtype, (None,) * rank), TensorType(dtype, (1,) * rank)


def possible_ranks(value: Value, depth: int = 64, memo: dict | None = None) -> frozenset[int] | None:
    """The ranks tensor `value` can have when its program does not fail first, or None where that is
    not known: its own where its type says; else what its producer's table rule gives at the ranks its
    tensor inputs can have, their dims unknown or 1 (_of_rank; a rule refuses a rank where the op
    itself fails). A scripted model's conv2d -> ReLU has no known rank, but 3 or 4 (conv2d takes
    nothing else), and so has a ResNet's ReLU of the sum of two such. `depth` bounds how far back
    producers are followed."""
    t = value.type
    if not isinstance(t, TensorType):
        return None
    if t.shape is not None:
        return frozenset((len(t.shape),))
    memo = {} if memo is None else memo
    if id(value) not in memo:
        memo[id(value)] = None  # (while it is worked out)
        memo[id(value)] = _producer_ranks(value.node, depth, memo)
    return memo[id(value)]


def _producer_ranks(node: Node | None, depth: int, memo: dict) -> frozenset[int] | None:
    """possible_ranks of `node`'s one output, by its rule at each combination of its tensor inputs' ranks."""
    results = _rule_results(node, depth, memo)
    if results is None:
        return None
    ranks = set()
    for at_highest, result in results:
        if not isinstance(result, TensorType) or result.shape is None or at_highest:
            return None  # (an op that takes the highest rank tried may take higher ones too)
        ranks.add(len(result.shape))
    return frozenset(ranks)


def type_at_rank(value: Value, rank: int) -> TensorType:
    """The type tensor `value` has where it is known to be of `rank`: its producer's rule at the
    input ranks that give it (embedding(idx, E) of rank 3 is (?, ?, E's width)), else any sizes."""
    t = value.type
    joined = None
    for _, result in _rule_results(value.node, 64, {}) or ():
        if isinstance(result, TensorType) and result.shape is not None and len(result.shape) == rank:
            joined = result if joined is None else _join(joined, result)
    if joined is None or joined.dtype is not t.dtype:
        return TensorType(t.dtype, (None,) * rank, t.device)
    return TensorType(t.dtype, joined.shape, t.device)


def _rule_results(node: Node | None, depth: int, memo: dict) -> list | None:
    """(whether an unknown-rank input was tried at the highest rank, result) of `node`'s table rule at
    each combination of its tensor inputs' possible ranks it accepts; None where that is not known."""
    definition = op_of(node) if node is not None else None
    if definition is None or depth == 0 or len(node.outputs) != 1:
        return None
    state = _ShapeState()
    choices, unbounded = [], []  # per input: the ranks (or the one meta) to try; which inputs' ranks are unknown
    for v in node.inputs:
        if isinstance(v.type, TensorType) and v.type.shape is None and not is_constant(v):
            ranks = possible_ranks(v, depth - 1, memo)
            unbounded.append(ranks is None)
            choices.append([meta for r in (range(_MAX_RANK + 1) if ranks is None else sorted(ranks))
                            for meta in _of_rank(v.type.dtype, r)])
        else:
            unbounded.append(False)
            choices.append([state.meta(v)])
    if math.prod(len(c) for c in choices) > _MAX_COMBINATIONS:
        return None
    results = []
    for metas in itertools.product(*choices):
        try:
            result = definition.shape(*metas)
        except Exception:
            continue  # (the op refuses these ranks)
        results.append((any(u and len(m.shape) == _MAX_RANK for u, m in zip(unbounded, metas)), result))
    return results


def _join(a: Type, b: Type) -> Type:
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        shape = None
        if a.shape is not None and b.shape is not None and len(a.shape) == len(b.shape):
            shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
        return TensorType(a.dtype if a.dtype is b.dtype else None, shape)
    return a


