"""Expressions: names, literals, f-strings, operators (through scriptc.ops.operators, the one
operator table), comparisons, `and`/`or`/`not` with short circuit and refinement, conditional
expressions, and tuple/list/dict displays."""

from __future__ import annotations

import warnings

from scriptc.ir.graph import Value
from scriptc.jit.arguments import union_name
from scriptc.ops import operators
from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DictType,
    DType,
    Float,
    Int,
    ListType,
    NoneType,
    OptionalType,
    Str,
    TensorType,
    TupleType,
    Type,
    UnionType,
)

from .. import ast
from .control import Conflict
from .modules import is_module_dict, is_parameter_dict
from .types import assignable, make_union, unify
from .values import MethodRef, SugaredModule, SugaredTuple

_KEY_TYPES = (Str, Int, Float, Bool, Complex)


class Expressions:
    """expr(node) -> an IR Value or a compile-time value (values.py)."""

    def expr(self, node: ast.Node, expected=None):
        handler = self.expression_handlers.get(type(node))
        if handler is None:
            raise self.error(f"'{type(node).__name__}' expressions are not supported", node)
        self.line, self.col = node.line, node.col
        return handler(self, node, expected)

    def as_value(self, value, node: ast.Node | None = None) -> Value:
        """An IR value for `value` (a compile-time tuple becomes a prim::TupleConstruct)."""
        if isinstance(value, Value):
            return value
        if isinstance(value, SugaredTuple):
            return self.make_tuple([self.as_value(v, node) for v in value.items])
        if isinstance(value, SugaredModule):
            return value.value
        if value is Ellipsis:
            raise self.error("'...' is only valid inside a subscript", node)
        if isinstance(value, MethodRef) and value.base.type == Any_:  # an Any has neither (refine it first)
            raise self.error(f"'Any' object has no attribute or method '{value.name}'", node)
        raise self.error(f"this {self.describe(value)} cannot be used as a value", node)

    def describe(self, value) -> str:
        return type(value).__name__.lower().replace("sugared", "")

    def make_tuple(self, items: list) -> Value:
        return self.emit1("prim::TupleConstruct", items, TupleType(tuple(v.type for v in items)))

    def as_bool(self, value, node: ast.Node) -> Value:
        """Python truthiness as a bool value (`if x:`): tensors of one element, numbers, strings,
        lists and dicts; an Optional needs an explicit `is not None`."""
        value = self.as_value(value, node)
        t = value.type
        if t == Bool:
            return value
        if t == NoneType:
            return self.const(False)
        if isinstance(t, TensorType):
            return self.emit1("bool.tensor", [value], Bool)
        if t in (Int, Float, Complex):
            return self.emit1("bool.scalar" if t != Complex else "bool.complex", [value], Bool)
        if t == Str or isinstance(t, (ListType, DictType)):
            return self.emit1("ne.scalar", [self.length(value, node), self.const(0)], Bool)
        if isinstance(t, TupleType):
            return self.const(bool(t.elems))
        if self.has_magic(value, "__bool__"):  # a script-class object: its __bool__
            result = self.as_value(self.object_method(value, "__bool__", [], {}, node), node)
            if result.type != Bool:
                raise self.error(f"expected a bool expression for condition but found {result.type}", node)
            return result
        raise self.error(f"expected a bool condition, got a value of type {t}", node)

    # --- names and literals -----------------------------------------------------------------------
    def expr_Name(self, node: ast.Name, expected):
        value = self.read(node.id)
        if isinstance(value, Conflict):
            raise self.error(value.message, node)
        if value is not None:
            return value
        if node.id == self.self_name and self.self_value is not None:
            return self.self_value
        return self.resolve_global(node.id, node)

    def expr_Constant(self, node: ast.Constant, expected):
        if node.value is Ellipsis:
            return Ellipsis
        if node.value is None and expected is not None and expected != NoneType:
            return self.emit1("prim::Refine", [self.const(None)], expected) if assignable(NoneType, expected) else \
                self.const(None)
        if isinstance(node.value, int) and not isinstance(node.value, bool) and not -2 ** 63 <= node.value < 2 ** 63:
            raise self.error(f"integer literal {node.value} does not fit in 64 bits", node)
        return self.const(node.value)

    def expr_JoinedStr(self, node: ast.JoinedStr, expected):
        """An f-string: "...{}...".format(values), as TorchScript compiles it. A conversion or format
        spec (`{x!r}`, `{x:.2f}`), which TorchScript refuses, formats as Python does (fstring.str)."""
        fields = [part for part in node.parts if not isinstance(part, str)]
        python = any(part.conversion or part.format_spec for part in fields)
        template = []
        for part in node.parts:
            if isinstance(part, str):
                template.append(part.replace("{", "{{").replace("}", "}}") if python else part)
            else:
                template.append("{" + (f"!{part.conversion}" if part.conversion else "") +
                                (f":{part.format_spec}" if part.format_spec else "") + "}" if python else "{}")
        values = [self.as_value(self.expr(part.value), part.value) for part in fields]
        self.at(node)
        return self.emit1("fstring.str" if python else "format.str", [self.const("".join(template)),
                                                                       self.make_tuple(values)], Str)

    def expr_Unsupported(self, node: ast.Unsupported, expected):
        raise self.unsupported(node)

    def expr_Starred(self, node: ast.Starred, expected):
        raise self.error("starred expressions are not supported", node)

    def expr_Slice(self, node: ast.Slice, expected):
        raise self.error("a slice is only valid inside a subscript", node)

    # --- displays ------------------------------------------------------------------------------------
    def expr_Tuple(self, node: ast.Tuple, expected):
        expected = self.container_hint(expected, TupleType)
        hints = expected.elems if expected is not None and len(expected.elems) == len(node.elts) else \
            [None] * len(node.elts)
        items = [self.expr(e, hint) for e, hint in zip(node.elts, hints)]
        if all(isinstance(v, Value) for v in items):
            self.at(node)
            return self.make_tuple(items)
        return SugaredTuple(items)

    def expr_List(self, node: ast.List, expected):
        expected = self.container_hint(expected, ListType)
        hint = expected.elem if expected is not None else None
        items = [self.as_value(self.expr(e, hint), e) for e in node.elts]
        self.at(node)
        if hint is not None:
            found = sorted({str(v.type) for v in items})
            unified = found[0] if len(found) == 1 else f"Union[{', '.join(found)}]"
            mismatch = (f"List type annotation `List[{hint}]` did not match the types of the given list elements, "
                        f"which were unified to {unified}")
            items = [self.coerce(v, hint, node, mismatch) for v in items]
            return self.emit1("prim::ListConstruct", items, ListType(hint))
        if not items:
            return self.emit1("prim::ListConstruct", [], ListType(TensorType()))
        elem = self.display_type([v.type for v in items], node, lambda union: (
            f"List consists of heterogeneous types, which means that it has been typed as containing "
            f"{union_name(union)}. To use any of the values in this List, it will be necessary to add an "
            "`assert isinstance` statement before first use to trigger type refinement."))
        items = [self.coerce(v, elem, node, f"a list of {elem} cannot hold a {v.type}") for v in items]
        return self.emit1("prim::ListConstruct", items, ListType(elem))

    def element_type(self, types: list, node, what: str):
        """The one type a display's items share (TorchScript's unification of list elements)."""
        elem = common_type(types)
        if elem is None:
            first, other = types[0], next(t for t in types if unify(types[0], t) is None)
            raise self.error(f"{what} elements have different types: {first} and {other}; annotate the {what} "
                             f"(e.g. x: List[Union[...]] = ...)", node)
        return elem

    def display_type(self, types: list, node, warning) -> Type:
        """The one type a display's items share, else the Union of their types, with torch's warning at
        the display (`warning(union)` words it)."""
        elem = common_type(types)
        if elem is None:
            elem = heterogeneous_union(types)
            self.warn_at(node, warning(elem))
        return elem

    def warn_at(self, node, message: str) -> None:
        """torch's compile-time warning, with the place in the source it is about."""
        warnings.warn_explicit(message, UserWarning, self.source.filename, node.line + self.source.line_offset)

    def expr_Dict(self, node: ast.Dict, expected):
        expected = self.container_hint(expected, DictType)
        key_hint = expected.key if isinstance(expected, DictType) else None
        value_hint = expected.value if isinstance(expected, DictType) else None
        keys = [self.as_value(self.expr(k, key_hint), k) for k in node.keys]
        values = [self.as_value(self.expr(v, value_hint), v) for v in node.values]
        self.at(node)
        if isinstance(expected, DictType):
            key_type, value_type = expected.key, expected.value
        elif keys:
            key_type = common_type([k.type for k in keys])
            if key_type is None:
                other = next(k.type for k in keys if unify(keys[0].type, k.type) is None)
                raise self.error(f"Dict keys must contain only a single type. Expected: {keys[0].type} but found "
                                 f"{other} instead", node)
            value_type = self.display_type([v.type for v in values], node, lambda union: (
                f"Dict values consist of heterogeneous types, which means that the dict has been typed as "
                f"containing Dict[{key_type}, {union_name(union)}]. To use any of the values in this Dict, it will "
                "be necessary to add an `assert isinstance` statement before first use to trigger type refinement."))
        else:
            key_type, value_type = Str, TensorType()
        if not (key_type in _KEY_TYPES or isinstance(key_type, TensorType)):
            raise self.error(f"dict keys must be str, int, float, bool, complex or Tensor, not {key_type}", node)
        items = []
        for k, v, kn, vn in zip(keys, values, node.keys, node.values):
            items.append(self.coerce(k, key_type, kn, f"a dict with {key_type} keys cannot have a {k.type} key"))
            items.append(self.coerce(v, value_type, vn, f"a dict of {value_type} values cannot hold a {v.type}"))
        return self.emit1("prim::DictConstruct", items, DictType(key_type, value_type))

    # --- operators -------------------------------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp, expected):
        left = self.expr(node.left)
        right = self.expr(node.right)
        self.at(node)
        return self.binary(node.op, left, right, node)

    def binary(self, symbol: str, left, right, node):
        """`left symbol right` by the operator table: the tensor op when a tensor takes part, else
        the Python-value ops (numbers with Python's int semantics, str, list, tuple)."""
        if symbol == "+":
            left, right = self.list_of_tuple(left, right, node), self.list_of_tuple(right, left, node)
        if isinstance(left, SugaredTuple) or isinstance(right, SugaredTuple) or self.is_tuple(left) and \
                self.is_tuple(right):
            return self.tuple_binary(symbol, left, right, node)
        left, right = self.as_value(left, node), self.as_value(right, node)
        operator = operators.BINARY[symbol]
        if self.has_magic(left, f"__{operator.dunder}__"):
            return self.object_method(left, f"__{operator.dunder}__", [right], {}, node)
        if self.has_magic(right, f"__r{operator.dunder}__"):
            return self.object_method(right, f"__r{operator.dunder}__", [left], {}, node)
        if isinstance(left.type, TensorType) or isinstance(right.type, TensorType):
            return self.tensor_binary(operator, left, right, node)
        if operator.scalar is None:
            raise self.error(_unsupported_operands(symbol, left, right), node)
        return self.python_op(operator.scalar, [left, right], {}, node,
                              failure=_unsupported_operands(symbol, left, right))

    def list_of_tuple(self, value, other, node):
        """A tuple added to a list of its items' type is a list (TorchScript converts a tuple where its
        add.t schema takes a list): BERT's x.size()[:-1] + (heads, head_size)."""
        if not self.tuple_like(value) or not isinstance(other, Value) or not isinstance(other.type, ListType):
            return value
        items = [self.as_value(v, node) for v in self.tuple_elements(value, node)]
        if not all(v.type == other.type.elem for v in items):
            return value
        return self.emit1("prim::ListConstruct", items, other.type)

    def is_tuple(self, value) -> bool:
        return isinstance(value, Value) and isinstance(value.type, TupleType)

    def tuple_binary(self, symbol: str, left, right, node):
        """Tuple + tuple and tuple * int are decided at compile time (the result's type depends on them)."""
        if symbol == "+" and self.tuple_like(left) and self.tuple_like(right):
            return self.sequence_of(self.tuple_elements(left, node) + self.tuple_elements(right, node))
        if symbol == "*":
            sequence, times = (left, right) if self.tuple_like(left) else (right, left)
            count = self.static_int(self.as_value(times, node))
            if count is None:
                raise self.error("a tuple can only be repeated a constant number of times", node)
            return self.sequence_of(self.tuple_elements(sequence, node) * max(count, 0))
        left, right = self.as_value(left, node), self.as_value(right, node)
        raise self.error(_unsupported_operands(symbol, left, right), node)

    def tuple_like(self, value) -> bool:
        return isinstance(value, SugaredTuple) or self.is_tuple(value)

    def tuple_elements(self, value, node) -> list:
        if isinstance(value, SugaredTuple):
            return list(value.items)
        return self.tuple_items(self.as_value(value, node))

    def sequence_of(self, items: list):
        if all(isinstance(v, Value) for v in items):
            return self.make_tuple(items)
        return SugaredTuple(items)

    def tensor_binary(self, operator, left: Value, right: Value, node):
        if operator.tensor is None:
            raise self.error(f"operator {operator.symbol} is not supported on tensors", node)
        if not isinstance(left.type, TensorType):
            if operator.commutative:
                left, right = right, left
            else:  # (a bool is the op's Scalar 1 or 0, as TorchScript converts it: True ** bool_t is int64)
                left = self.scalar_to_tensor(self.emit1("int.scalar", [left], Int) if left.type == Bool else left,
                                             node)
        return self.call_op(operator.tensor, [left, right], {}, node)

    def inplace_binary(self, symbol: str, target: Value, value, node):
        """`tensor op= value`: the op's in-place variant, writing into the tensor."""
        operator = operators.BINARY[symbol]
        if operator.tensor is None:
            raise self.error(f"operator {symbol}= is not supported on tensors", node)
        return self.call_op(operator.tensor + "_", [target, self.as_value(value, node)], {}, node, method=True)

    def scalar_to_tensor(self, value: Value, node) -> Value:
        if value.type not in (Int, Float, Bool, Complex):
            raise self.error(f"a tensor operation needs a number or a tensor, got {value.type}", node)
        return self.emit1("scalar_tensor.scalar", [value], TensorType())

    def expr_UnaryOp(self, node: ast.UnaryOp, expected):
        if node.op == "not":
            value = self.as_bool(self.expr(node.operand), node.operand)
            static = self.static_bool(value)
            self.at(node)
            return self.const(not static) if static is not None else self.emit1("not.scalar", [value], Bool)
        operand = self.as_value(self.expr(node.operand), node.operand)
        self.at(node)
        magic = {"-": "__neg__", "+": "__pos__", "~": "__invert__"}.get(node.op)
        if magic is not None and self.has_magic(operand, magic):  # -obj: obj.__neg__()
            return self.object_method(operand, magic, [], {}, node)
        if node.op == "+":
            return operand
        constant = self.static_number(operand)
        if node.op == "-" and constant is not None:
            return self.const(-constant)
        operator = operators.UNARY[node.op]
        if isinstance(operand.type, TensorType):
            return self.call_op(operator.tensor, [operand], {}, node)
        return self.python_op(operator.scalar, [operand], {}, node,
                              failure=f"bad operand type for unary {node.op}: {operand.type}")

    def expr_BoolOp(self, node: ast.BoolOp, expected):
        """`a and b and c`: each operand evaluated only when needed, later operands compiled with the
        refinements of the earlier ones (`x is not None and x > 0`)."""
        refinements = {}
        result = self.as_bool(self.expr(node.values[0]), node.values[0])
        is_and = node.op == "and"
        for previous, operand in zip(node.values, node.values[1:]):
            when_true, when_false = self.refinements(previous)
            refinements.update(when_true if is_and else when_false)
            result = self.short_circuit(is_and, result, operand, dict(refinements), node)
        return result

    def short_circuit(self, is_and: bool, left: Value, operand: ast.Node, refinements: dict, node) -> Value:
        static = self.static_bool(left)
        if static is not None:
            if static != is_and:
                return left
            self.scopes.append(refinements)
            try:
                return self.as_bool(self.expr(operand), operand)
            finally:
                self.scopes.pop()
        self.at(node)
        branch = self.emit("prim::If", [left], [Bool])
        for index in range(2):
            with self.inside(branch.add_block(), dict(refinements) if (index == 0) == is_and else {}):
                evaluate = (index == 0) == is_and
                branch.blocks[index].add_return(self.as_bool(self.expr(operand), operand) if evaluate else left)
        return branch.output

    def expr_IfExp(self, node: ast.IfExp, expected):
        cond, (when_true, when_false) = self.condition(node.test)
        static = self.static_bool(cond)
        if static is not None:
            self.scopes.append(when_true if static else when_false)
            try:
                return self.expr(node.body if static else node.orelse, expected)
            finally:
                self.scopes.pop()
        self.at(node)
        branch = self.emit("prim::If", [cond], [])
        values = []
        for refined, sub in ((when_true, node.body), (when_false, node.orelse)):
            with self.inside(branch.add_block(), dict(refined)):
                values.append(self.as_value(self.expr(sub, expected), sub))
        merged = expected if expected is not None and all(assignable(v.type, expected) for v in values) else \
            unify(values[0].type, values[1].type)
        if merged is None:
            raise self.error(f"the branches of a conditional expression have types {values[0].type} and "
                             f"{values[1].type}, which do not unify", node)
        for block, v in zip(branch.blocks, values):
            block.add_return(v)
        return branch.add_output(merged)

    # --- comparisons --------------------------------------------------------------------------------------
    def expr_Compare(self, node: ast.Compare, expected):
        left = self.expr(node.left)
        operands = [node.left] + node.comparators
        if len(node.ops) == 1:
            right = self.expr(node.comparators[0])
            self.at(node)
            return self.compare(node.ops[0], left, right, node)
        # a < b < c: each comparison only when the previous held, each operand evaluated once
        return self.compare_chain(node, left, list(zip(node.ops, operands[1:])))

    def compare_chain(self, node, left, rest: list) -> Value:
        op, right_node = rest[0]
        right = self.expr(right_node)
        self.at(node)
        test = self.compare(op, left, right, node)
        if len(rest) == 1:
            return test
        static = self.static_bool(test)
        if static is False:
            return test
        if static is True:
            return self.compare_chain(node, right, rest[1:])
        branch = self.emit("prim::If", [test], [Bool])
        with self.inside(branch.add_block()):
            branch.blocks[0].add_return(self.compare_chain(node, right, rest[1:]))
        with self.inside(branch.add_block()):
            branch.blocks[1].add_return(self.const(False))
        return branch.output

    def compare(self, op: str, left, right, node) -> Value:
        if op in ("is", "is not"):
            return self.identity(op, left, right, node)
        if op in ("in", "not in"):
            found = self.contains(right, left, node)
            return found if op == "in" else self.negate(found)
        left, right = self.as_value(left, node), self.as_value(right, node)
        operator = operators.COMPARE[op]
        if self.has_magic(left, f"__{operator.dunder}__"):  # obj < other: obj.__lt__(other)
            return self.object_method(left, f"__{operator.dunder}__", [right], {}, node)
        if op == "!=" and self.has_magic(left, "__eq__"):
            return self.negate(self.object_method(left, "__eq__", [right], {}, node))
        if self.has_magic(right, f"__{operators.COMPARE[operator.flipped].dunder}__"):
            return self.object_method(right, f"__{operators.COMPARE[operator.flipped].dunder}__", [left], {}, node)
        if isinstance(left.type, TensorType) or isinstance(right.type, TensorType):
            if not isinstance(left.type, TensorType):
                left, right, operator = right, left, operators.COMPARE[operator.flipped]
            return self.call_op(operator.tensor, [left, right], {}, node)
        if op in ("==", "!=") and (left.type == NoneType or right.type == NoneType):
            return self.identity("is" if op == "==" else "is not", left, right, node)
        if op in ("==", "!=") and isinstance(left.type, ListType) != isinstance(right.type, ListType):
            # a list compared with a tuple of its elements compares as lists (TorchScript converts the tuple)
            left = self.implicit_conversion(left, right.type) or left if isinstance(right.type, ListType) else left
            right = self.implicit_conversion(right, left.type) or right if isinstance(left.type, ListType) else right
        if (left.type, right.type) in ((DType, Int), (Int, DType)):  # x.dtype == 6: TorchScript's dtypes are ints
            left, right = (self.implicit_conversion(v, Int) if v.type == DType else v for v in (left, right))
        return self.python_op(operator.scalar, [left, right], {}, node,
                              failure=f"'{op}' is not supported between {left.type} and {right.type}")

    def negate(self, value: Value) -> Value:
        static = self.static_bool(value)
        return self.const(not static) if static is not None else self.emit1("not.scalar", [value], Bool)

    def identity(self, op: str, left, right, node) -> Value:
        """`is` / `is not`: against None it tests an Optional (known at compile time for other types);
        between other values it is identity for objects and equality for values without one."""
        if isinstance(left, SugaredModule) and isinstance(right, SugaredModule):  # known when compiling
            return self.const((left.module is right.module) == (op == "is"))
        left, right = self.as_value(left, node), self.as_value(right, node)
        if right.type != NoneType and left.type == NoneType:
            left, right = right, left
        if right.type == NoneType:
            static = self.static_is_none(left.type)
            if static is not None:
                return self.const(static == (op == "is"))
            out = self.emit1("prim::IsNone", [left], Bool)
            return out if op == "is" else self.negate(out)
        out = self.emit1("is.any", [left, right], Bool)
        return out if op == "is" else self.negate(out)

    def static_is_none(self, t) -> bool | None:
        if t == NoneType:
            return True
        if isinstance(t, OptionalType) or t == Any_ or isinstance(t, UnionType) and NoneType in t.options:
            return None
        return False

    def contains(self, container, item, node) -> Value:
        """`item in container`: tuples unrolled at compile time, lists/dicts/strings by op."""
        if isinstance(container, SugaredTuple) or self.is_tuple(container):
            result = self.const(False)
            for element in self.tuple_elements(container, node):
                result = self.short_circuit_value(result, lambda e=element: self.compare("==", item, e, node))
            return result
        if isinstance(container, SugaredModule) and is_module_dict(container.module):  # "key" in self.layers
            key = item.node.attrs.get("value") if isinstance(item, Value) and item.node is not None and \
                item.node.op == "prim::Constant" else None
            if not isinstance(key, str):
                raise self.error("`in` on a ModuleDict takes a string constant in scripted code", node)
            names = container.module._parameters if is_parameter_dict(container.module) else container.module._modules
            return self.const(key in names)
        container, item = self.as_value(container, node), self.as_value(item, node)
        if self.has_magic(container, "__contains__"):
            return self.object_method(container, "__contains__", [item], {}, node)
        if isinstance(container.type, TensorType):
            return self.bool_of(self.call_op("eq", [container, item], {}, node), "any", node)
        return self.python_op("contains", [container, item], {}, node,
                              failure=f"argument of type {container.type} does not support 'in' with a {item.type}")

    def bool_of(self, tensor: Value, reduction: str, node) -> Value:
        return self.emit1("bool.tensor", [self.call_op(reduction, [tensor], {}, node)], Bool)

    def short_circuit_value(self, left: Value, right_fn) -> Value:
        """left or right(), with right compiled only when left is not already True."""
        static = self.static_bool(left)
        if static is True:
            return left
        right = right_fn()
        if static is False:
            return right
        return self.emit1("or.scalar", [left, right], Bool)

    # --- small helpers -------------------------------------------------------------------------------------
    def static_int(self, value) -> int | None:
        if isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant":
            v = value.node.attrs["value"]
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return None

    def static_number(self, value) -> int | float | None:
        if isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant":
            v = value.node.attrs["value"]
            if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
                return v
        return None


def common_type(types: list):
    """The one type display items share (TorchScript's unification of list elements), or None."""
    elem = types[0]
    for t in types[1:]:
        elem = unify(elem, t)
        if elem is None:
            return None
    return TensorType() if isinstance(elem, TensorType) else elem


def heterogeneous_union(types: list):
    """The Union torch types a display of items no one type holds as (tensors of any dtype as one Tensor)."""
    return make_union([TensorType() if isinstance(t, TensorType) else t for t in types])


def _unsupported_operands(symbol: str, left: Value, right: Value) -> str:
    """torch's refusal of an operator no schema takes these operands for, naming them."""
    return f"Arguments for call are not valid: unsupported operand types for {symbol}: {left.type} and {right.type}"
