"""Facts about nodes that several passes need: constants, purity, aliasing."""

from __future__ import annotations

from scriptc import ops
from scriptc.ir.graph import Node, Value
from scriptc.types import DictType, ListType, ObjectType

_MUTABLE = (ListType, DictType, ObjectType)

_EFFECTFUL_PRIMS = {"prim::RaiseException", "prim::Call"}
_PURE_PRIMS = {"prim::Constant", "prim::TupleConstruct", "prim::TupleUnpack", "prim::TupleIndex", "prim::ListUnpack",
               "prim::GetAttr", "prim::IsNone", "prim::Refine", "prim::Uninitialized", "prim::DictConstruct"}


def is_constant(v: Value) -> bool:
    return v.node is not None and v.node.op == "prim::Constant"


def constant_value(v: Value):
    return v.node.attrs["value"]


def op_of(node: Node):
    return ops.OPS.get(node.op)


def _mutation_disabled(node: Node, op) -> bool:
    """batch_norm(training=False) writes nothing: its `mutates` depend on a constant-false flag; nor
    does instance_norm without running statistics: what it would write is a constant None."""
    if all(is_constant(node.inputs[op.arg_index[name]]) and constant_value(node.inputs[op.arg_index[name]]) is None
           for name in op.mutates):
        return True
    if op.mutates_when is None:
        return False
    flag = node.inputs[op.arg_index[op.mutates_when]]
    return is_constant(flag) and constant_value(flag) is False


def has_side_effects(node: Node) -> bool:
    """Nodes dce must keep and cse must not merge: mutation, randomness, raising, calls out."""
    if node.op in _EFFECTFUL_PRIMS:
        return True
    if node.op.startswith("prim::"):
        if node.op in ("prim::If", "prim::Loop", "prim::FusionGroup", "prim::With"):
            return any(has_side_effects(n) for b in node.blocks for n in b)
        return node.op not in _PURE_PRIMS and node.op != "prim::ListConstruct"
    op = op_of(node)
    if op is None:
        return True
    if op.mutates and not op.inplace_of and op.kind != "random" and _mutation_disabled(node, op):
        return False
    if op.kind == "random" and not op.mutates and op.inplace_of is None and _not_training(node, op):
        return False  # dropout in eval: draws nothing
    return op.has_side_effects


def _not_training(node: Node, op) -> bool:
    """A random op with a `training` flag (the dropout family) that is constant false: the identity."""
    if "training" not in op.arg_index:
        return False
    flag = node.inputs[op.arg_index["training"]]
    return is_constant(flag) and constant_value(flag) is False


def is_pure(node: Node) -> bool:
    """Safe to evaluate once, reorder, or drop when unused. Lists, dicts and objects are mutable, so
    neither making one (two `[]` are two lists) nor reading one (len(l), d[k]) is: another op may
    change it in between."""
    return not has_side_effects(node) and not node.blocks and \
        not any(isinstance(v.type, _MUTABLE) for v in node.inputs) and \
        not any(isinstance(v.type, _MUTABLE) for v in node.outputs)


# What reads a list without changing it or letting it escape (slice.list reads it into a new list).
LIST_READERS = frozenset({"len.list", "getitem.list", "slice.list"})


def read_only_list(value: Value, written: set = frozenset()) -> bool:
    """Whether a list is only read - its length, items and slices (themselves only read) - and no item
    read from it is in `written` (ids of values written in place): then it is as constant as a tensor
    attribute (an RNN's _flat_weights), and reading it is pure."""
    for use in value.uses:
        user = use.user
        if not isinstance(user, Node) or user.op not in LIST_READERS or use.index != 0:
            return False
        if user.op == "slice.list" and not read_only_list(user.output, written):
            return False
        if user.op == "getitem.list" and id(user.output) in written:
            return False
    return True


def unchanged_list(value: Value) -> bool:
    """Whether a list keeps the items it was built with: no op changes it (an append, a setitem) and
    no structural op (a call, a loop carrying it) takes it where one might. A list that a loop
    appends to after reading it (DenseNet's features) is not."""
    for use in value.uses:
        user = use.user
        if isinstance(user, Node) and (user.op.startswith("prim::") or value in mutated_values(user)):
            return False
    return True


def mutated_values(node: Node) -> list[Value]:
    """The inputs this node writes into (an in-place op's self, batch_norm's running stats)."""
    op = op_of(node)
    if op is None:
        return []
    out = []
    if op.inplace_of is not None:
        out.append(node.inputs[0])
    if not _mutation_disabled(node, op):
        for name in op.mutates:
            out.append(node.inputs[op.arg_index[name]])
    return out


_WRITING_PRIMS = {"prim::Call", "prim::SetAttr", "prim::Fork", "prim::Wait"}


def written_later(value: Value) -> bool:
    """Whether the value may be written in place after it is made - by an in-place op on it, on a view
    of it, on it taken back out of a list - or leaves the graph (a caller may write into it): a folded
    constant is shared by every call, so such a value must stay computed, and a loaded constant
    that is written needs an array of its own."""
    return _written(value, leaving_writes=True)


def written_through_views(value: Value) -> bool:
    """Whether an in-place op writes the value, a view of it (`y = self.a.view(2, 3); y[0] += 1`) or
    an item of it (`self.pairs[0][0] += 1`), followed through view ops, item reads and prim:: nodes
    within the graph (unlike written_later, leaving the graph is no write)."""
    return _written(value, leaving_writes=False)


def _written(value: Value, leaving_writes: bool) -> bool:
    """Whether an in-place op writes the value or what is taken from it through prim:: nodes, view ops
    and item reads; a use outside the graph counts as a write where `leaving_writes`."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for use in v.uses:
            user = use.user
            if not isinstance(user, Node):
                if leaving_writes:
                    return True
                continue
            if v in mutated_values(user):
                return True
            op = op_of(user)
            if user.op.startswith("prim::") or op is not None and (op.view or op.kind == "scalar"):
                stack.extend(user.outputs)
    return False


def writes_memory(node: Node) -> bool:
    """Whether the node may change a tensor, list, dict or object some other value aliases (an in-place
    op, a list append, a call out): values computed before it may be stale after it."""
    if node.op in _WRITING_PRIMS:
        return True
    if node.blocks:
        return any(writes_memory(n) for b in node.blocks for n in b)
    op = op_of(node)
    return op is not None and bool(mutated_values(node))


# The ops a normalized_shape made of its input's own sizes is computed with (trailing_sizes).
SIZE_OPS = ("size", "size.all", "getitem.list", "slice.list", "prim::ListConstruct", "prim::TupleConstruct")


def trailing_sizes(shape: Value, x: Value) -> int | None:
    """n where `shape` is the last n sizes of tensor `x`, in order - x.shape[-1:], [x.size(-1)],
    (x.size(-2), x.shape[-1]): a layer_norm's normalized_shape that matches its input by
    construction, so a kernel needs only how many dims it spans; else None."""
    node = shape.node
    if node is None:
        return None
    if node.op == "slice.list":
        sizes, start, end, step = node.inputs
        first = _size_index(start, x)
        if _sizes_of(sizes, x) and first is not None and first < 0 and is_constant(end) and \
                constant_value(end) is None and is_constant(step) and constant_value(step) == 1:
            return -first
        return None
    if node.op not in ("prim::ListConstruct", "prim::TupleConstruct") or not node.inputs:
        return None
    count = len(node.inputs)
    for i, item in enumerate(node.inputs):
        if _item_index(item, x) != i - count:
            return None
    return count


def _sizes_of(v: Value, x: Value) -> bool:
    return v.node is not None and v.node.op == "size.all" and v.node.inputs[0] is x


def _item_index(item: Value, x: Value) -> int | None:
    """k (negative) where `item` is x.size(k) or x.shape[k]."""
    node = item.node
    if node is None or len(node.inputs) != 2:
        return None
    if (node.op == "size" and node.inputs[0] is x) or (node.op == "getitem.list" and _sizes_of(node.inputs[0], x)):
        return _size_index(node.inputs[1], x)
    return None


def _size_index(v: Value, x: Value) -> int | None:
    """A constant dim index, negative (a positive one counts from x's rank, where x's type has one)."""
    if not is_constant(v) or type(constant_value(v)) is not int:
        return None
    index = constant_value(v)
    if index >= 0:
        shape = getattr(x.type, "shape", None)
        return index - len(shape) if shape is not None and index < len(shape) else None
    return index
