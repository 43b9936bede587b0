"""Types in the source: annotations and `# type:` comments, isinstance() and torch.jit.isinstance(),
refinement of Optional and Union variables, and the implicit conversions TorchScript inserts."""

from __future__ import annotations

from scriptc._awaits import _Await
from scriptc.errors import ScriptError, ScriptValueError
from scriptc.ir.graph import Value
from scriptc.ops.schema import SCALAR
from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DictType,
    DType,
    Float,
    FutureType,
    Int,
    InterfaceType,
    ListType,
    ModuleType,
    NoneType,
    ObjectType,
    OptionalType,
    Scalar,
    TensorType,
    TupleType,
    UnionType,
)

from .. import ast
from ..lalr import SyntaxProblem
from ..parser import parse_expression
from .types import (
    GENERICS,
    NEED_ELEMENTS,
    AnnotationError,
    builtin_type_name,
    generic_type,
    make_union,
    members,
    missing_elements,
    named_type,
    python_type,
    static_isinstance,
)
from .values import Refined, TypeValue

_BARE = {"list": ListType(Any_), "tuple": TupleType(()), "dict": DictType(Any_, Any_)}


def broadcast_length(annotation) -> int | None:
    """N for a BroadcastingListN[T] or _size_N_t annotation (also inside Optional[...]): a parameter
    a single T stands for N of, as F.max_pool2d's kernel_size."""
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and \
            annotation.value.id == "Optional":
        annotation = annotation.index
    if isinstance(annotation, ast.Name):
        return _size_alias_length(annotation.id)
    head = annotation.value if isinstance(annotation, ast.Subscript) else None
    name = head.id if isinstance(head, ast.Name) else head.attr if isinstance(head, ast.Attribute) else ""
    return int(name[-1]) if name[:-1] == "BroadcastingList" and name[-1:].isdigit() else None


def _size_alias_length(name: str) -> int | None:
    """N of torch.nn.common_types' `_size_N_t` (an int or N of them): TorchScript knows these aliases
    by name, as a BroadcastingListN[int]."""
    is_alias = len(name) == 9 and name.startswith("_size_") and name.endswith("_t") and name[6].isdigit()
    return int(name[6]) if is_alias else None


class Annotations:
    """Annotation parsing, isinstance, refinement."""

    def annotation(self, node: ast.Node):
        """The IR type an annotation expression names."""
        try:
            return self._annotation(node)
        except AnnotationError as exc:
            raise self.error(str(exc), node, getattr(exc, "kind", ScriptError)) from None

    def _annotation(self, node: ast.Node, in_dict: bool = False):
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NoneType
            if isinstance(node.value, str):
                try:
                    return self._annotation(parse_expression(node.value, node.line, node.col))
                except SyntaxProblem as exc:
                    raise AnnotationError(exc.message) from None
        if isinstance(node, ast.BinOp) and node.op == "|":
            return make_union([self._annotation(node.left, in_dict), self._annotation(node.right, in_dict)])
        if isinstance(node, ast.Subscript):
            head = self.annotation_head(node.value)
            index = node.index.elts if isinstance(node.index, ast.Tuple) else [node.index]
            return generic_type(head, [self._annotation(i, in_dict or head == "Dict") for i in index])
        if isinstance(node, ast.Name) and _size_alias_length(node.id) is not None:
            return ListType(Int)  # torch.nn.common_types' _size_N_t, by its name as torch reads it
        if isinstance(node, (ast.Name, ast.Attribute)):
            found, obj = self.lookup_object(node)
            if found and _untyped_module_class(obj):
                # torch has no type for any module: inside a Dict its Python-side annotation reader
                # refuses the class (a ValueError), elsewhere its compiler the name
                if in_dict:
                    refusal = AnnotationError(f"Unknown type annotation: '{obj!r}'")
                    refusal.kind = ScriptValueError
                    raise refusal
                raise AnnotationError(f"Unknown type name '{_dotted(node)}'")
            if found:
                return python_type(obj, self.class_type)
            if isinstance(node, ast.Name) and named_type(node.id) is not None:
                return named_type(node.id)
            if _dotted(node).split(".")[-1] in NEED_ELEMENTS:
                raise missing_elements(_dotted(node).split(".")[-1])
            raise AnnotationError(f"unknown type annotation '{_dotted(node)}'")
        if isinstance(node, ast.Tuple) and not node.elts:
            return TupleType(())
        raise AnnotationError("unsupported type annotation")

    def annotation_head(self, node: ast.Node) -> str:
        name = _dotted(node) or ""
        short = name.split(".")[-1]
        if short in GENERICS:
            return short
        found, obj = self.lookup_object(node)
        if found:
            short = getattr(obj, "_name", None) or getattr(obj, "__name__", short)
            if short in GENERICS:
                return short
        raise AnnotationError(f"unknown generic type '{name}'")

    def annotation_text(self, text: str, where: ast.Node):
        """The type a `# type: T` comment names."""
        try:
            expression = parse_expression(text, where.line, where.col)
        except SyntaxProblem as exc:
            raise self.error(f"bad type comment: {exc.message}", where) from None
        return self.annotation(expression)

    def type_comment_signature(self, text: str, where: ast.Node) -> tuple[list | None, object]:
        """(parameter types, return type or None) of a `# type: (A, B) -> R` comment; for `(...) -> R`,
        None for the parameter types (each parameter's own comment gives its)."""
        params_text, arrow, result = text.partition("->")
        params_text = params_text.strip()
        if not (params_text.startswith("(") and params_text.endswith(")")):
            raise self.error(f"bad type comment '{text}': expected (types) -> type", where)
        inner = params_text[1:-1].strip()
        params = []
        if inner == "...":  # the parameters' types are in comments on their own lines
            params = None
        elif inner:
            tree = self.parse_annotation_text(f"({inner},)", where)
            params = [self.annotation(e) for e in tree.elts]
        returns = self.annotation(self.parse_annotation_text(result.strip(), where)) if arrow else None
        return params, returns

    def parse_annotation_text(self, text: str, where: ast.Node):
        try:
            return parse_expression(text, where.line, where.col)
        except SyntaxProblem as exc:
            raise self.error(f"bad type comment: {exc.message}", where) from None

    def type_argument(self, node: ast.Node):
        """The type an isinstance()/jit.isinstance()/jit.annotate argument names (a tuple: a Union)."""
        if isinstance(node, ast.Tuple):
            return make_union([self.type_argument(e) for e in node.elts])
        if isinstance(node, (ast.Name, ast.Attribute)):
            found, obj = self.lookup_object(node)
            name = builtin_type_name(obj) if found else None
            if name in _BARE:
                return _BARE[name]
            if found and obj is _Await:  # isinstance(aw, torch.jit._Await): an Await of anything
                return FutureType(Any_)
        return self.annotation(node)

    # --- isinstance --------------------------------------------------------------------------------
    def isinstance_test(self, value, target, node) -> Value:
        """isinstance(value, target): a constant when the static type decides it, else a runtime
        check of the value's class (for a Union/Optional/Any)."""
        if isinstance(target, TypeValue):
            target = target.type
        value = self.as_value(value, node)
        static = static_isinstance(value.type, target)
        if static is not None:
            return self.const(static)
        return self.emit1("prim::isinstance", [value], Bool, {"types": [str(t) for t in members(target)]})

    def refinements(self, test: ast.Node) -> tuple[dict, dict]:
        """({name: Refined} when `test` is true, {...} when false) for `x is [not] None`,
        isinstance(x, T) and torch.jit.isinstance(x, T), through `not`, `and` and `or`."""
        if isinstance(test, ast.UnaryOp) and test.op == "not":
            when_true, when_false = self.refinements(test.operand)
            return when_false, when_true
        if isinstance(test, ast.BoolOp):
            parts = [self.refinements(v) for v in test.values]
            merged: dict = {}
            for when_true, when_false in parts:
                merged.update(when_true if test.op == "and" else when_false)
            return (merged, {}) if test.op == "and" else ({}, merged)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and test.ops[0] in ("is", "is not"):
            name, other = _name_and_other(test.left, test.comparators[0])
            if name is None or not (isinstance(other, ast.Constant) and other.value is None):
                return {}, {}
            narrowed = self.narrow(name, lambda t: t != NoneType)
            return ({}, narrowed) if test.ops[0] == "is" else (narrowed, {})
        if isinstance(test, ast.Call) and len(test.args) == 2 and isinstance(test.args[0], ast.Name) and \
                self.builtin_name(test.func) in ("isinstance", "jit.isinstance"):
            try:
                target = self.type_argument(test.args[1])
            except Exception:  # noqa: BLE001 - the call itself reports a bad type when compiled
                return {}, {}
            name = test.args[0].id
            bound = self.lookup(name)
            if isinstance(bound, (Refined, Value)) and bound.type == Any_:  # Any: the checked type when true
                return {name: Refined(bound.value if isinstance(bound, Refined) else bound, target)}, {}
            kept = self.narrow(name, lambda t: static_isinstance(t, target) is not False)
            dropped = self.narrow(name, lambda t: static_isinstance(t, target) is not True)
            return kept, dropped
        return {}, {}

    def narrow(self, name: str, keep) -> dict:
        """{name: Refined(value, the members of its type that `keep` accepts)}, when that narrows it."""
        bound = self.lookup(name)
        base = bound.value if isinstance(bound, Refined) else bound
        current = bound.type if isinstance(bound, (Refined, Value)) else None
        if current is None or not isinstance(current, (OptionalType, UnionType)) and current not in (Any_, Scalar):
            return {}
        options = [m for m in members(current) if keep(m)]
        if not options or len(options) == len(members(current)):
            return {}
        return {name: Refined(base, make_union(options))}

    # --- conversions ------------------------------------------------------------------------------
    def implicit_conversion(self, value: Value, target, from_tensor: bool = False):
        """The conversions TorchScript makes where a type is declared: int -> float -> complex, a
        tuple of numbers -> List, and (`from_tensor`: for call arguments and jit.annotate) a
        one-element tensor -> a number and a number of unknown kind (Scalar) -> int or float. None
        when there is none."""
        t = value.type
        if from_tensor and isinstance(t, TensorType) and target in (Int, Float, Scalar):  # numbers, not bool
            kind = {Int: "int", Float: "float", Scalar: "scalar"}[target]
            return self.emit1("number.tensor", [value, self.const(kind)], target)
        if target == Float and t in (Int, Bool):
            return self.emit1("float.scalar", [value], Float)
        if from_tensor and t == Scalar and target in (Int, Float):  # x.item() for an int or float parameter
            return self.emit1("int.scalar" if target == Int else "float.scalar", [value], target)
        if from_tensor and target == DType and t == Int:  # TorchScript's dtypes are ints: x.to(6)
            return self.emit1("dtype.int", [value], DType)
        if target == Int and t == DType:  # and a dtype is an int where one is declared
            return self.emit1("int.dtype", [value], Int)
        if isinstance(target, TupleType) and isinstance(t, TupleType) and len(t.elems) == len(target.elems) and \
                any(e == DType and w == Int for e, w in zip(t.elems, target.elems)):  # (x.dtype, 1) as Tuple[int, int]
            items = [self.implicit_conversion(v, w) if v.type == DType and w == Int else v
                     for v, w in zip(self.tuple_items(value), target.elems)]
            return self.make_tuple(items)
        if target == Complex and t in (Int, Float, Bool):
            return self.emit1("complex.scalar", [value, self.const(0.0)], Complex)
        if isinstance(target, ListType) and isinstance(t, TupleType) and all(
                e == target.elem or (isinstance(e, TensorType) and isinstance(target.elem, TensorType))
                for e in t.elems):
            return self.emit1("prim::ListConstruct", self.tuple_items(value), target)
        if isinstance(target, InterfaceType) and isinstance(t, ObjectType):  # an object as a class interface's
            return self.to_interface(value, target)
        if isinstance(target, InterfaceType) and isinstance(t, ModuleType) and self.takes_module(target):
            return self.emit1("prim::Refine", [value], target)  # a submodule as a module interface's value
        if isinstance(target, OptionalType) and t != NoneType:  # the conversion to what the Optional holds
            inner = self.implicit_conversion(value, target.elem, from_tensor)
            return None if inner is None else self.emit1("prim::Refine", [inner], target)
        return None

    def scalar_argument(self, value: Value, declared, op) -> Value:
        """A bool passed where a tensor op takes a Scalar is an int there, as TorchScript converts it
        (`bool_t + True` and `torch.full([2], True)` are int64 tensors in scripted code); the ops on
        Python numbers (`a & b` of bools) keep it a bool."""
        if value.type != Bool or op.kind == SCALAR:
            return value
        declared = declared.elem if isinstance(declared, OptionalType) else declared
        options = declared.options if isinstance(declared, UnionType) else (declared,)
        return self.emit1("int.scalar", [value], Int) if Scalar in options and Bool not in options else value

    def container_hint(self, expected, kind):
        """The `kind` (ListType, DictType, TupleType) type an annotation asks a display to be: itself,
        or its only member of that kind in a Union/Optional (None: nothing to go by)."""
        if expected is None:
            return None
        options = [m for m in members(expected) if isinstance(m, kind)]
        return options[0] if len(options) == 1 else None

    def as_list(self, value: Value, node) -> Value:
        if isinstance(value.type, ListType):
            return value
        if isinstance(value.type, TupleType):
            items = self.tuple_items(value)
            elem = items[0].type if items else TensorType()
            return self.emit1("prim::ListConstruct", items, ListType(elem))
        raise self.error(f"expected a list, got a value of type {value.type}", node)


def _name_and_other(left, right):
    if isinstance(left, ast.Name):
        return left.id, right
    if isinstance(right, ast.Name):
        return right.id, left
    return None, None


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _untyped_module_class(obj) -> bool:
    """nn.Module and ScriptModule themselves: classes of modules that name no TorchScript type."""
    from scriptc.jit.module import ScriptModule
    from scriptc.nn import Module

    return obj is Module or obj is ScriptModule
