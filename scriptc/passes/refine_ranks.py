"""refine_ranks: where the conditions a point runs under leave a tensor one rank, its readers there
read it typed with that rank.

A scripted nn.LSTM raises unless `input.dim()` is 2 or 3, then unsqueezes the input only where
`input.dim() != 3`: inside each branch the rank is known, though the input's type says nothing
(a graph scripted without example inputs). The conditions are those of `dim(v)` compared with
constants (through not/and/or): a raise-guard (an If one branch of which only raises) holds after
it in its block, an If's condition holds in its branches. Where they leave `v` one rank, the uses
of `v` they cover read `prim::Refine(v)` typed by `v`'s producer rule at that rank (an embedding of
rank 3 is (?, ?, its table's width)), so shape inference and folding see the sizes in there.
"""

from __future__ import annotations

from scriptc.ir.graph import Block, Graph, Node, Value
from scriptc.types import TensorType

from .analysis import constant_value, is_constant
from .shape_infer import possible_ranks, type_at_rank

_RANKS = frozenset(range(9))  # (what a rank not otherwise bounded may be)


def refine_ranks(graph: Graph) -> bool:
    return _refine_block(graph.block, {})


def _refine_block(block: Block, facts: dict) -> bool:
    """facts: id(v) -> (v, the ranks v can have here)."""
    changed = False
    for node in list(block):
        if node.op != "prim::If":
            for inner in node.blocks:
                changed |= _refine_block(inner, facts)
            continue
        condition = node.inputs[0]
        for taken, branch in zip((True, False), node.blocks):
            inner = _constrain(facts, condition, taken)
            changed |= _insert_refines(facts, inner, branch, None)
            changed |= _refine_block(branch, inner)
        raising = [_only_raises(b) for b in node.blocks]
        if len(raising) == 2 and raising[0] != raising[1]:
            after = _constrain(facts, condition, not raising[0])
            changed |= _insert_refines(facts, after, block, node)
            facts = after
    return changed


def _only_raises(block: Block) -> bool:
    return any(n.op == "prim::RaiseException" for n in block) and not block.returns


def _constrain(facts: dict, condition: Value, holds: bool) -> dict:
    """`facts` narrowed by `condition` being `holds`, for each v whose dim(v) it reads."""
    out = dict(facts)
    for v in _tested(condition, 16):
        known = facts[id(v)][1] if id(v) in facts else possible_ranks(v) or _RANKS
        out[id(v)] = (v, frozenset(r for r in known if _evaluate(condition, v, r, 16) in (holds, None)))
    return out


def _tested(value: Value, depth: int) -> list[Value]:
    """The tensors v whose dim(v) the boolean expression `value` reads."""
    node = value.node
    if node is None or depth == 0:
        return []
    if node.op == "dim" and len(node.inputs) == 1 and isinstance(node.inputs[0].type, TensorType) \
            and node.inputs[0].type.shape is None:
        return [node.inputs[0]]
    if node.op in ("not.scalar", "or.scalar", "and.scalar", "eq.scalar", "ne.scalar"):
        found = {}
        for x in node.inputs:
            found.update((id(v), v) for v in _tested(x, depth - 1))
        return list(found.values())
    return []


def _evaluate(value: Value, v: Value, rank: int, depth: int):
    """What `value` is where dim(v) == rank: a bool or int, or None where that does not decide it."""
    if is_constant(value):
        return constant_value(value)
    node = value.node
    if node is None or depth == 0:
        return None
    if node.op == "dim" and node.inputs[0] is v:
        return rank
    args = [_evaluate(x, v, rank, depth - 1) for x in node.inputs]
    if node.op == "not.scalar":
        return None if args[0] is None else not args[0]
    if node.op in ("or.scalar", "and.scalar"):
        decisive = node.op == "or.scalar"
        if decisive in args:
            return decisive
        return None if None in args else not decisive
    if node.op in ("eq.scalar", "ne.scalar") and all(type(a) is int for a in args):
        return (args[0] == args[1]) == (node.op == "eq.scalar")
    return None


def _insert_refines(before: dict, after: dict, block: Block, anchor: Node | None) -> bool:
    """For each v that `after` leaves one rank and `before` did not: a prim::Refine of v to that
    rank at the start of `block` (or after `anchor` in it), read by the uses of v it covers."""
    changed = False
    for key, (v, ranks) in after.items():
        if len(ranks) != 1 or (key in before and len(before[key][1]) == 1):
            continue
        covered = [u for u in v.uses if _covers(block, anchor, u.user)]
        if not covered:
            continue
        refine = Node("prim::Refine", [v], [type_at_rank(v, next(iter(ranks)))], None,
                      (anchor or block.owner_node).loc)
        if anchor is not None:
            refine.insert_after(anchor)
        else:
            block.prepend(refine)
        for use in covered:
            if isinstance(use.user, Node):
                use.user.set_input(use.index, refine.output)
            else:
                use.user.set_return(use.index, refine.output)
        changed = True
    return changed


def _covers(block: Block, anchor: Node | None, user) -> bool:
    """Whether `user` (a node, or a block that returns the value) is in `block` (after `anchor`)."""
    node = user if isinstance(user, Node) else None
    inner = user.owner if isinstance(user, Node) else user
    while inner is not None and inner is not block:
        node = inner.owner_node
        inner = node.owner if node is not None else None
    if inner is None:
        return False
    return anchor is None or node is None or anchor.is_before(node)
