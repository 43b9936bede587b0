"""remove_mutation: in-place ops and list appends to functional form, where aliasing allows."""

from __future__ import annotations

from scriptc.ir.graph import Block, Graph, Node, Value, walk
from scriptc.types import ListType

from .analysis import op_of


def _fresh_tensor(v: Value) -> bool:
    """A tensor that nothing else aliases: made by a non-view op, and never viewed."""
    if v.node is None or v.node.op.startswith("prim::"):
        return False
    op = op_of(v.node)
    if op is None or op.view or op.kind == "scalar":
        return False  # a scalar op's tensor may be one a list or dict also holds (l[0], d["k"])
    if op.inplace_of is not None:
        return False  # x.add_(y) is x itself: an in-place op left in place wrote to what it was given
    for use in v.uses:
        user = use.user
        if isinstance(user, Node):
            user_op = op_of(user)
            if user_op is not None and user_op.view:
                return False
            if user.op in ("prim::ListConstruct", "prim::TupleConstruct", "prim::Call"):
                return False
        else:
            return False
    return True


def _top_level(node: Node, block: Block) -> Node | None:
    """The ancestor of node that sits directly in block (node itself when it does)."""
    while node is not None and node.owner is not block:
        owner = node.owner.owner_node if node.owner is not None else None
        node = owner
    return node


def remove_mutation(graph: Graph) -> bool:
    """`y = x.add_(1)` becomes `y = add(x, 1)` with later uses of x reading y, when x is fresh
    (not an input, attribute, view or list element) and every later use is in the same block
    (or nested in a later node of it). `l.append(v)` on a list only appended to and read after
    becomes a longer ListConstruct."""
    changed = False
    for node in list(walk(graph.block)):
        op = op_of(node)
        if op is not None and op.inplace_of is not None:
            changed |= _functionalize(node, op)
        elif node.op == "append.list":
            changed |= _fold_append(node)
    return changed


def _functionalize(node: Node, op) -> bool:
    target = node.inputs[0]
    if not _fresh_tensor(target) or target.node.owner is not node.owner:
        return False
    block = node.owner
    order = {id(n): i for i, n in enumerate(block)}
    position = order[id(node)]
    later = []
    for use in list(target.uses):
        if use.user is node:
            continue
        if not isinstance(use.user, Node):
            if use.user is block:
                later.append(use)
                continue
            return False
        top = _top_level(use.user, block)
        if top is None:
            return False
        if order[id(top)] < position:
            if top.blocks:
                return False  # a loop that reads x before the write in this block: not straight-line
            continue
        later.append(use)
    pure = Node(op.inplace_of.name, list(node.inputs), [node.output.type], dict(node.attrs), node.loc)
    pure.insert_before(node)
    node.output.replace_all_uses_with(pure.output)
    for use in later:
        if isinstance(use.user, Node):
            use.user.set_input(use.index, pure.output)
        else:
            use.user.set_return(use.index, pure.output)
    node.erase()
    return True


def _fold_append(node: Node) -> bool:
    lst = node.inputs[0]
    producer = lst.node
    if producer is None or producer.op != "prim::ListConstruct" or producer.owner is not node.owner:
        return False
    for use in lst.uses:
        if isinstance(use.user, Node) and use.user is not node:
            user = use.user
            if user.owner is not node.owner:
                return False
            if _before(user, node):
                return False  # the list is read before this append: the append is visible there
    if any(u.user is node and u.index != 0 for u in lst.uses):
        return False
    grown = Node("prim::ListConstruct", list(producer.inputs) + [node.inputs[1]], [ListType(lst.type.elem)],
                 None, producer.loc)
    grown.insert_before(node)
    lst.replace_all_uses_with(grown.output)
    node.output.replace_all_uses_with(grown.output)
    node.erase()
    if not producer.output.uses:
        producer.erase()
    return True


def _before(a: Node, b: Node) -> bool:
    return a.is_before(b)

