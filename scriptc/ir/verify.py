"""verify(graph): SSA dominance across nested blocks, op-schema types, and prim:: op arity."""

from __future__ import annotations

from scriptc import ops
from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DictType,
    EnumType,
    EnumValue,
    Float,
    FutureType,
    Int,
    ListType,
    ModuleType,
    NoneType,
    ObjectType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
    UnionType,
)

from .graph import Block, Graph, Node
from .parser import ParseError, parse_type


class VerifyError(ValueError):
    """The graph breaks an IR invariant; the message names the node and its source location."""


def _where(node: Node) -> str:
    return f"{node.op}" + (f" at {node.loc}" if node.loc else "")


def fits(actual: Type, expected: Type) -> bool:
    """Whether a value of type `actual` may be passed where an op schema declares `expected`."""
    if expected == Any_ or actual == expected:
        return True
    if isinstance(actual, UnionType):
        return all(fits(o, expected) for o in actual.options)
    if isinstance(expected, UnionType):
        return any(fits(actual, o) for o in expected.options)
    if isinstance(expected, OptionalType):
        return actual == NoneType or fits(actual, expected.elem) or (
            isinstance(actual, OptionalType) and fits(actual.elem, expected.elem))
    if isinstance(expected, TensorType):
        return isinstance(actual, TensorType)
    if expected == Scalar:
        return actual in (Int, Float, Complex, Bool, Scalar)
    if expected == Float:
        return actual in (Float, Int, Bool)
    if expected == Complex:
        return actual in (Complex, Float, Int, Bool)
    if expected == Int:
        return actual in (Int, Bool)
    if isinstance(expected, ListType):
        if expected.elem == Any_ and isinstance(actual, ListType):
            return True  # the generic list ops (len, getitem, append) take any element type
        if isinstance(actual, ListType):
            return fits(actual.elem, expected.elem) or (
                isinstance(actual.elem, OptionalType) and fits(actual.elem.elem, expected.elem))
        if isinstance(actual, TupleType):
            return all(fits(e, expected.elem) for e in actual.elems)
        return expected.elem == Int and actual == Int  # TorchScript's int -> int[] broadcast
    if isinstance(expected, TupleType):
        return isinstance(actual, TupleType) and len(actual.elems) == len(expected.elems) and all(
            fits(a, e) for a, e in zip(actual.elems, expected.elems))
    if isinstance(expected, DictType):
        return isinstance(actual, DictType) and fits(actual.key, expected.key) and fits(actual.value, expected.value)
    if isinstance(expected, FutureType):
        return isinstance(actual, FutureType) and fits(actual.elem, expected.elem)
    return False


def _check_op(node: Node) -> None:
    op = ops.OPS.get(node.op)
    if op is None:
        raise VerifyError(f"{_where(node)}: unknown op '{node.op}'")
    args = op.schema.args
    if len(node.inputs) != len(args):
        raise VerifyError(f"{_where(node)}: expected {len(args)} inputs ({op.schema}), got {len(node.inputs)}")
    for arg, value in zip(args, node.inputs):
        if not fits(value.type, arg.type):
            raise VerifyError(f"{_where(node)}: argument '{arg.name}' expects {arg.type}, got {value.type}")
    returns = op.schema.returns
    if len(node.outputs) != len(returns):
        raise VerifyError(f"{_where(node)}: expected {len(returns)} outputs, got {len(node.outputs)}")
    for expected, out in zip(returns, node.outputs):
        if isinstance(expected, TensorType) and not isinstance(out.type, TensorType):
            raise VerifyError(f"{_where(node)}: output should be a Tensor, declared {out.type}")


def _arity(node: Node, inputs=None, outputs=None, blocks=0, attrs=()) -> None:
    if inputs is not None and len(node.inputs) != inputs:
        raise VerifyError(f"{_where(node)}: expected {inputs} inputs, got {len(node.inputs)}")
    if outputs is not None and len(node.outputs) != outputs:
        raise VerifyError(f"{_where(node)}: expected {outputs} outputs, got {len(node.outputs)}")
    if len(node.blocks) != blocks:
        raise VerifyError(f"{_where(node)}: expected {blocks} blocks, got {len(node.blocks)}")
    for a in attrs:
        if a not in node.attrs:
            raise VerifyError(f"{_where(node)}: missing attribute '{a}'")


def _check_with(node: Node) -> None:
    _arity(node, inputs=0, blocks=2)
    body, exit_block = node.blocks
    if body.params or exit_block.params or exit_block.returns or len(body.returns) != len(node.outputs):
        raise VerifyError(f"{_where(node)}: prim::With takes a body block returning its {len(node.outputs)} outputs "
                          "and an exit block, neither with parameters")


def _check_if(node: Node) -> None:
    _arity(node, inputs=1, blocks=2)
    if node.inputs[0].type != Bool:
        raise VerifyError(f"{_where(node)}: condition must be bool, got {node.inputs[0].type}")
    for i, b in enumerate(node.blocks):
        if b.params:
            raise VerifyError(f"{_where(node)}: block{i} of prim::If takes no parameters")
        if len(b.returns) != len(node.outputs):
            raise VerifyError(f"{_where(node)}: block{i} returns {len(b.returns)} values for "
                              f"{len(node.outputs)} outputs")


def _check_loop(node: Node) -> None:
    if len(node.inputs) < 2 or len(node.blocks) != 1:
        raise VerifyError(f"{_where(node)}: prim::Loop takes (max_trip, cond, carried...) and one block")
    if not fits(node.inputs[0].type, Int) or node.inputs[1].type != Bool:
        raise VerifyError(f"{_where(node)}: prim::Loop needs an int trip count and a bool condition")
    carried = len(node.inputs) - 2
    body = node.blocks[0]
    if len(body.params) != carried + 1 or len(body.returns) != carried + 1 or len(node.outputs) != carried:
        raise VerifyError(f"{_where(node)}: prim::Loop with {carried} carried values needs a body "
                          f"(i, carried...) -> (cond, carried...) and {carried} outputs")
    if body.returns[0].type != Bool:
        raise VerifyError(f"{_where(node)}: the loop body must return its condition (bool) first")


def _check_tuple_unpack(node: Node) -> None:
    _arity(node, inputs=1)
    t = node.inputs[0].type
    if isinstance(t, TupleType) and len(t.elems) != len(node.outputs):
        raise VerifyError(f"{_where(node)}: unpacks {len(node.outputs)} values from {t}")


_SCALAR_VALUES = {Int: int, Float: float, Str: str, Bool: bool}


def _check_constant(node: Node) -> None:
    _arity(node, inputs=0, outputs=1, attrs=("value",))
    t, value = node.output.type, node.attrs["value"]
    if isinstance(t, EnumType) and not (isinstance(value, EnumValue) and value.enum == t.name and
                                        _SCALAR_VALUES.get(t.value, object) is type(value.value)):
        raise VerifyError(f"{_where(node)}: a constant of type {t} holds {value!r}")


def _check_tuple_construct(node: Node) -> None:
    _arity(node, outputs=1)
    t = node.output.type
    if isinstance(t, TupleType) and t.elems and len(t.elems) != len(node.inputs):
        raise VerifyError(f"{_where(node)}: makes a {t} of {len(node.inputs)} values")


def _check_isinstance(node: Node) -> None:
    _arity(node, inputs=1, outputs=1, attrs=("types",))
    types = node.attrs["types"]
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise VerifyError(f"{_where(node)}: types must be a list of type names, got {types!r}")
    for text in types:
        try:
            parse_type(text)
        except ParseError as exc:
            raise VerifyError(f"{_where(node)}: {text[:80]!r} is not a type ({exc})") from None


def _check_fusion_group(node: Node) -> None:
    _arity(node, blocks=1)
    body = node.blocks[0]
    if len(body.params) != len(node.inputs) or len(body.returns) != len(node.outputs):
        raise VerifyError(f"{_where(node)}: the fusion subgraph's parameters and returns must match the "
                          "node's inputs and outputs")


PRIM_CHECKS = {
    "prim::Constant": _check_constant,
    "prim::GetAttr": lambda n: (_arity(n, inputs=1, outputs=1, attrs=("name",)), _named(n),
                                _require(n, isinstance(n.inputs[0].type, (ModuleType, ObjectType)),
                                         "input must be a Module or an object")),
    "prim::If": _check_if,
    "prim::Loop": _check_loop,
    "prim::With": _check_with,
    "prim::TupleConstruct": _check_tuple_construct,
    "prim::TupleUnpack": _check_tuple_unpack,
    "prim::TupleIndex": lambda n: _arity(n, inputs=1, outputs=1, attrs=("index",)),
    "prim::ListConstruct": lambda n: _arity(n, outputs=1),
    "prim::ListUnpack": lambda n: _arity(n, inputs=1),
    "prim::DictConstruct": lambda n: (_arity(n, outputs=1),
                                      _require(n, len(n.inputs) % 2 == 0, "takes keys and values in pairs")),
    "prim::FusionGroup": _check_fusion_group,
    "prim::Call": lambda n: _arity(n, attrs=("function",)),
    "prim::RaiseException": lambda n: (_arity(n, outputs=0, attrs=("message",)),
                                       _require(n, len(n.inputs) <= 1, "takes at most one input (the message)")),
    "prim::Uninitialized": lambda n: _arity(n, inputs=0, outputs=1),
    "prim::IsNone": lambda n: _arity(n, inputs=1, outputs=1),
    "prim::Refine": lambda n: _arity(n, inputs=1, outputs=1),
    "prim::SetAttr": lambda n: (_arity(n, inputs=2, outputs=0, attrs=("name",)), _named(n)),
    "prim::CreateObject": lambda n: _arity(n, inputs=0, outputs=1, attrs=("class",)),
    "prim::isinstance": _check_isinstance,
    "prim::Fork": lambda n: (_arity(n, outputs=1, attrs=("function",)),
                             _require(n, isinstance(n.output.type, FutureType), "must produce a Future")),
    "prim::Wait": lambda n: _arity(n, inputs=1, outputs=1),
}


def _named(node: Node) -> None:
    _require(node, isinstance(node.attrs["name"], str), f"names {node.attrs['name']!r}, not a string")


def _require(node: Node, condition: bool, message: str) -> None:
    if not condition:
        raise VerifyError(f"{_where(node)}: {message}")


def _check_node(node: Node) -> None:
    if node.op.startswith("prim::"):
        check = PRIM_CHECKS.get(node.op)
        if check is None:
            raise VerifyError(f"{_where(node)}: unknown prim op '{node.op}'")
        check(node)
    else:
        _check_op(node)
        if node.blocks:
            raise VerifyError(f"{_where(node)}: op-table ops have no blocks")
    for out in node.outputs:
        if out.node is not node:
            raise VerifyError(f"{_where(node)}: output bookkeeping is inconsistent")
    if node.op == "prim::DictConstruct" and not isinstance(node.output.type, DictType):
        raise VerifyError(f"{_where(node)}: prim::DictConstruct must produce a Dict")


def verify(graph: Graph) -> Graph:
    """Check SSA (every use dominated by its definition, also across nested blocks), types against
    op schemas, and the arity of prim:: ops. Raises VerifyError naming the node; returns the graph."""
    defined: set[int] = set()
    for p in graph.inputs:
        defined.add(id(p))
    _verify_block(graph.block, defined, None)
    return graph


def _verify_block(block: Block, defined: set[int], owner: Node | None) -> None:
    added: list[int] = []
    for node in block:
        if node.owner is not block:
            raise VerifyError(f"{_where(node)}: node's owner block is inconsistent")
        for i, v in enumerate(node.inputs):
            if id(v) not in defined:
                raise VerifyError(f"{_where(node)}: input {i} is used before it is defined (or outside its scope)")
        _check_node(node)
        for b in node.blocks:
            inner = [id(p) for p in b.params]
            defined.update(inner)
            _verify_block(b, defined, node)
            defined.difference_update(inner)
        for out in node.outputs:
            defined.add(id(out))
            added.append(id(out))
    for i, v in enumerate(block.returns):
        if id(v) not in defined:
            where = _where(owner) if owner is not None else "graph"
            raise VerifyError(f"{where}: returned value {i} is not defined in scope")
    if owner is not None:
        defined.difference_update(added)
