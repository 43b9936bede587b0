"""fuse: group pointwise ops (optionally ending in one reduction, or following a matmul/linear/conv)
into prim::FusionGroup nodes that codegen compiles into one kernel.

One forward scan per block. A node joins the group of one of its producers when that is legal:
the group is open, dtypes and iteration shapes agree (where they are known), and no node between
the group's last member and this one reads a value the group produces (so placing the group at its
last member keeps every use after its definition and never creates a cycle).

Sizes are never needed. Where every input's dtype and rank are known (a traced graph), the group
records a guard: per input its dtype, rank and which dims are size 1 (broadcast), and its kernel
is compiled with the plan. A scripted graph's tensors may have no dtype or shape at all: such
values fuse too, and the group has no guard - the executor compiles it on its first call, for the
dtypes, ranks and broadcast pattern that call has (runtime/groups.py).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from scriptc import ops
from scriptc.ir.graph import Block, Graph, Node, Value
from scriptc.types import Bool, Float, Int, TensorType

from scriptc.ops.schema import LAYER_NORM

from .analysis import constant_value, is_constant, op_of, trailing_sizes

# One op is a group too: a compiled kernel is as fast as numpy's, and a segment program runs it in
# its native call (runtime/segments.py) where a lone numpy op would stop the program.
MIN_MEMBERS = 1
# A group's expression trees are as deep as its longest chain, and codegen walks them recursively;
# a chain longer than this continues in a new group (a 1,000-relu chain was one 1,000-deep tree,
# past Python's recursion limit). Groups stop growing at MAX_MEMBERS, so one kernel's compile time is
# bounded too (real models' groups have a few to a few dozen members).
MAX_DEPTH = 64
MAX_MEMBERS = 256


@dataclass
class _Group:
    """A group being formed, kept so that each check costs the same however long the group is.

    Members are in the order they joined (block order is restored when the group is materialized).
    `readers` is a heap of (position, id) of the block's nodes that read a member's output (a block's
    own returns count, placed last), members among them until _legal drops them as they surface;
    `reads` counts each reader's uses and `outside` the uses by non-members."""
    shape: tuple | None = None
    dtype: object = None
    closed: bool = False
    head: Node | None = None
    reduction: Node | None = None
    members: list[Node] = field(default_factory=list)
    member_ids: set = field(default_factory=set)
    readers: list = field(default_factory=list)
    reads: dict = field(default_factory=dict)
    outside: int = 0

    def add(self, node: Node, position: dict) -> None:
        self.members.append(node)
        self.member_ids.add(id(node))
        self.outside -= self.reads.get(id(node), 0)
        block = node.owner
        for out in node.outputs:
            for use in out.uses:
                reader = _in_block(use.user, block)
                key = (len(position), id(block)) if reader is None else (position[id(reader)], id(reader))
                heapq.heappush(self.readers, key)
                self.reads[key[1]] = self.reads.get(key[1], 0) + 1
                self.outside += 1

    def absorb(self, other: "_Group") -> None:
        """Take `other`'s members (the smaller group into the larger: linear in the smaller)."""
        self.outside += other.outside
        self.outside -= sum(self.reads.get(id(m), 0) for m in other.members)
        self.outside -= sum(n for reader, n in other.reads.items() if reader in self.member_ids)
        self.members += other.members
        self.member_ids |= other.member_ids
        for reader in other.readers:
            heapq.heappush(self.readers, reader)
        for reader, n in other.reads.items():
            self.reads[reader] = self.reads.get(reader, 0) + n


def _same_space(a: tuple | None, b: tuple | None) -> bool:
    """Whether two iteration shapes may be one group's: equal, or either unknown (the executor
    checks a group of unknown shapes when it first runs)."""
    return a is None or b is None or a == b


def _same_dtype(a, b) -> bool:
    return a is None or b is None or a is b


def _scalar_ok(v: Value) -> bool:
    return v.type in (Int, Float, Bool)


def _pointwise_fusible(node: Node) -> bool:
    op = op_of(node)
    if op is None or op.kind != ops.POINTWISE or op.inplace_of is not None or len(node.outputs) != 1:
        return False
    if not isinstance(node.output.type, TensorType) or node.output.type.device != "cpu":
        return False
    return all(isinstance(v.type, TensorType) or _scalar_ok(v) or is_constant(v) for v in node.inputs)


def _reduction_fusible(node: Node) -> bool:
    op = op_of(node)
    if op is None or op.fusion_tail is None or len(node.outputs) != 1 or \
            not isinstance(node.inputs[0].type, TensorType) or not isinstance(node.output.type, TensorType):
        return False
    if node.output.type.dtype is not node.inputs[0].type.dtype:
        return False  # (a dtype unknown on one side only: dtype= or an integer sum)
    # dims, keepdim, normalized_shape, eps... must be compile-time constants for the kernel (or a
    # layer_norm's normalized_shape its input's own last sizes, which the group computes itself).
    derived = _derived_shape(node)
    return all(is_constant(v) or isinstance(v.type, TensorType) or v is derived for v in node.inputs[1:])


def _derived_shape(node: Node) -> Value | None:
    """A layer_norm's normalized_shape that is no constant but its input's last sizes -
    F.layer_norm(x, (x.shape[-1],)), scripted without example inputs: the kernel needs only how
    many dims it spans, and the group computes the list from its input (the reference's fallback
    reads it)."""
    op = op_of(node)
    if op is None or op.fusion_tail is None or op.fusion_tail.form != LAYER_NORM:
        return None
    shape = node.inputs[op.arg_index["normalized_shape"]]
    return shape if not is_constant(shape) and trailing_sizes(shape, node.inputs[0]) is not None else None


def _head_fusible(node: Node) -> bool:
    """A library op that may start a group (OpDef.fusion_head): its options (a conv's stride...) are
    constants, and its result is a float tensor the group's epilogue reads."""
    op = op_of(node)
    if op is None or not op.fusion_head or not isinstance(node.output.type, TensorType):
        return False
    if node.output.type.dtype is not None and not node.output.type.dtype.is_floating_point:
        return False
    return all(is_constant(v) for v, arg in zip(node.inputs, op.schema.args) if not arg.is_tensor)


def fuse(graph: Graph) -> bool:
    return _fuse_block(graph.block)


def _fuse_block(block: Block) -> bool:
    changed = False
    for node in block:
        if node.op == "prim::FusionGroup":
            # Fused already (an optimized graph optimized again: a saved plan, a specialized copy):
            # its guard is what its inputs' types say now, never what it was given.
            guard = guard_of(node) if all(_guardable(v.type) for v in node.inputs) else None
            if guard != node.attrs.get("guard"):
                node.attrs.pop("guard", None)
                if guard is not None:
                    node.attrs["guard"] = guard
                changed = True
            continue
        for b in node.blocks:
            changed |= _fuse_block(b)
    position = {id(n): i for i, n in enumerate(block)}
    group_of: dict[int, _Group] = {}
    groups: dict[int, _Group] = {}  # by id, in creation order
    depth: dict[int, int] = {}  # a member's longest chain of members ending in it
    for node in list(block):
        pointwise = _pointwise_fusible(node)
        reduction = not pointwise and _reduction_fusible(node)
        if not (pointwise or reduction or _head_fusible(node)):
            continue
        if pointwise or reduction:
            candidates = _candidate_groups(node, group_of, position, reduction)
            joined = 1 + max((depth[id(v.node)] for v in node.inputs
                              if v.node is not None and any(group_of.get(id(v.node)) is c for c in candidates)),
                             default=0)
            if joined > MAX_DEPTH or sum(len(c.members) for c in candidates) >= MAX_MEMBERS:
                candidates = []
            if candidates:
                depth[id(node)] = joined
                # The largest absorbs the others, so a node's group changes O(log n) times at most.
                target = max(candidates, key=lambda g: len(g.members))
                for other in candidates:
                    if other is target:
                        continue
                    _merge(target, other, group_of)
                    del groups[id(other)]
                target.add(node, position)
                group_of[id(node)] = target
                if pointwise and target.shape is None:
                    target.shape, target.dtype = _shape(node.output), node.output.type.dtype
                if reduction:
                    target.closed, target.reduction = True, node
                continue
        group = _Group(_shape(node.output), node.output.type.dtype)
        group.add(node, position)
        depth[id(node)] = 1
        if reduction:
            group.shape = _shape(node.inputs[0])
            group.closed, group.reduction = True, node
        elif not pointwise:
            group.head = node
        groups[id(group)] = group
        group_of[id(node)] = group
    for group in groups.values():
        pointwise_count = sum(1 for m in group.members if m is not group.head and m is not group.reduction)
        worth = len(group.members) >= MIN_MEMBERS or group.reduction is not None
        if group.head is not None and pointwise_count == 0:
            worth = False
        if worth:
            group.members.sort(key=lambda m: position[id(m)])
            _materialize(group, block)
            changed = True
    return changed


def _candidate_groups(node: Node, group_of: dict, position: dict, reduction: bool) -> list[_Group]:
    """The producers' groups `node` may join: the first, plus, for a pointwise node, every other one
    it can merge with - 0.5 * x * (1 + tanh(...)) reads two chains that become one kernel, not two."""
    candidates: list[_Group] = []
    inputs = [node.inputs[0]] if reduction else [v for v in node.inputs if isinstance(v.type, TensorType)]
    copied = _size_nodes(node) if reduction else set()
    for v in inputs:
        group = group_of.get(id(v.node)) if v.node is not None else None
        if group is None or group.closed or any(group is c for c in candidates):
            continue
        if reduction:
            if not _same_space(_shape(node.inputs[0]), group.shape) or \
                    not _same_dtype(node.inputs[0].type.dtype, group.dtype):
                continue
            # A reduction kernel writes only its result: the chain feeding it must not be needed elsewhere
            # (but by the size nodes of a layer_norm's shape that the group takes in).
            if group.outside != group.reads.get(id(node), 0) + sum(group.reads.get(c, 0) for c in copied):
                continue
        elif not _same_space(_shape(node.output), group.shape) or not _same_dtype(node.output.type.dtype, group.dtype):
            continue
        if candidates and (group.head is not None or candidates[0].head is not None):
            continue  # a kernel has at most one BLAS head, and it comes first
        if _legal(group, node, position, copied):
            candidates.append(group)
            if reduction:
                break
    return candidates


def _merge(target: _Group, other: _Group, group_of: dict) -> None:
    target.absorb(other)
    for m in other.members:
        group_of[id(m)] = target


def _legal(group: _Group, node: Node, position: dict, copied=()) -> bool:
    """No node outside the group, placed before `node`, may read a value the group defines (but the
    `copied` ones, which the group takes in: _size_nodes)."""
    readers = group.readers
    while readers and readers[0][1] in group.member_ids:
        heapq.heappop(readers)
    if not readers or readers[0][0] >= position[id(node)]:
        return True
    return bool(copied) and all(at >= position[id(node)] or reader in copied or reader in group.member_ids
                                for at, reader in readers)


def _size_nodes(node: Node) -> set:
    """The ids of the nodes that compute a layer_norm's derived normalized_shape (_derived_shape) and
    that nothing else reads: the group computes the list itself, and they go (_materialize)."""
    shape = _derived_shape(node)
    if shape is None:
        return set()
    chain, pending = [], [shape.node]
    while pending:
        n = pending.pop()
        if n.op == "prim::Constant" or any(n is c for c in chain):
            continue
        chain.append(n)
        pending += [v.node for v in n.inputs if v is not node.inputs[0]]
    ids = {id(n) for n in chain} | {id(node)}
    if any(not isinstance(u.user, Node) or id(u.user) not in ids for n in chain for v in n.outputs for u in v.uses):
        return set()
    return ids - {id(node)}


def _in_block(user, block: Block) -> Node | None:
    """The node of `block` that is `user` or holds it in a nested block; None for `block`'s returns."""
    while isinstance(user, Node) and user.owner is not block:
        user = user.owner.owner_node if user.owner is not None else None
    return user if isinstance(user, Node) else None


def _materialize(group: _Group, block: Block) -> None:
    members = group.members
    member_ids = {id(m) for m in members}
    fusion = Node("prim::FusionGroup", [], [], None, members[-1].loc)
    fusion.insert_before(members[-1])
    body = fusion.add_block()
    mapping: dict[int, Value] = {}
    derived = {id(m): _derived_shape(m) for m in members}
    for m in members:
        for v in m.inputs:
            if id(v) in mapping or (v.node is not None and id(v.node) in member_ids) or v is derived[id(m)]:
                continue
            if is_constant(v) and not isinstance(v.type, TensorType):
                clone = Node("prim::Constant", [], [v.type], {"value": constant_value(v)}, v.node.loc)
                body.append(clone)
                mapping[id(v)] = clone.output
                continue
            fusion.add_input(v)
            mapping[id(v)] = body.add_param(v.type, v.name)
    for m in members:
        shape = derived[id(m)]
        if shape is not None:
            x = m.inputs[0]
            originals = _size_nodes(m)
            copied = _copy_sizes(body, shape, x, mapping.get(id(x), x), {})
        body.append(m)
        for i, v in enumerate(list(m.inputs)):
            if id(v) in mapping:
                m.set_input(i, mapping[id(v)])
            elif v is shape:
                m.set_input(i, copied)
        if shape is not None:
            # The originals read nothing else now: they go, before a member they read moves into the group.
            for n in reversed([n for n in block if id(n) in originals]):
                n.erase()
    for m in members:
        for out in m.outputs:
            outside = [u for u in out.uses if not (isinstance(u.user, Node) and _inside(u.user, body))]
            if not outside:
                continue
            body.add_return(out)
            exported = fusion.add_output(out.type)
            exported.name = out.name
            for use in outside:
                if isinstance(use.user, Node):
                    use.user.set_input(use.index, exported)
                else:
                    use.user.set_return(use.index, exported)
    kind = "epilogue" if group.head is not None else ("reduction" if group.reduction is not None else "pointwise")
    fusion.attrs["kind"] = kind
    if all(_guardable(v.type) for v in fusion.inputs):
        fusion.attrs["guard"] = guard_of(fusion)


def _copy_sizes(body: Block, value: Value, x: Value, x_inside: Value, copies: dict) -> Value:
    """Append to `body` copies of the nodes that compute `value` from tensor `x` (size ops and
    constants, analysis.trailing_sizes), reading `x_inside` for x; their result."""
    if value is x:
        return x_inside
    if id(value) not in copies:
        node = value.node
        inputs = [_copy_sizes(body, v, x, x_inside, copies) for v in node.inputs]
        copy = Node(node.op, inputs, [value.type], dict(node.attrs), node.loc)
        body.append(copy)
        copies[id(value)] = copy.output
    return copies[id(value)]


def _inside(node: Node, block: Block) -> bool:
    while node is not None:
        if node.owner is block:
            return True
        node = node.owner.owner_node if node.owner is not None else None
    return False


def _shape(v: Value) -> tuple | None:
    return None if v.type.shape is None else tuple(v.type.shape)


def _guardable(t) -> bool:
    """Whether a group input's type says all its guard holds: a dtype and a rank, or a scalar."""
    return not isinstance(t, TensorType) or (t.dtype is not None and t.shape is not None)


def guard_of(group: Node) -> list:
    """The guard of a FusionGroup whose inputs' types are all known (see _guardable)."""
    return [_guard(v.type) for v in group.inputs]


def _guard(t) -> list:
    """[dtype, rank, size-1 dims] for a tensor input; ["scalar", type] otherwise."""
    if isinstance(t, TensorType):
        ones = [i for i, d in enumerate(t.shape) if d == 1]
        return [t.dtype.name, len(t.shape), ones]
    return ["scalar", str(t)]


def guard_matches(guard: list, value) -> bool:
    """Whether a runtime value fits a FusionGroup input's guard (dtype, rank, broadcast dims)."""
    import numpy as np

    if guard[0] == "scalar":
        return not isinstance(value, np.ndarray)
    if not isinstance(value, np.ndarray) or value.dtype.name != guard[0] or value.ndim != guard[1]:
        return False
    shape = value.shape
    ones = guard[2]
    for i in range(value.ndim):
        if (shape[i] == 1) != (i in ones):
            return False
    return True
