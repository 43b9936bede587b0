"""Subscripts: tensors (through scriptc.ops.subscript, the routine eager indexing uses too), lists,
strings, dicts, tuples (indexed and sliced by constants), and ModuleList/ModuleDict/Sequential."""

from __future__ import annotations

from scriptc import ops
from scriptc.ir.graph import Value
from scriptc.ops import subscript as indexing
from scriptc.types import (
    Bool,
    DictType,
    Float,
    Int,
    ListType,
    NoneType,
    OptionalType,
    Str,
    TensorType,
    TupleType,
)

from .. import ast
from .values import ClassRef, SliceValue, SugaredModule, SugaredTuple


class Subscripts:
    """x[index] for every subscriptable value, reading and writing."""

    def expr_Subscript(self, node: ast.Subscript, expected):
        if isinstance(node.value, (ast.Name, ast.Attribute)):
            found, obj = self.lookup_object(node.value)
            if found and getattr(obj, "__name__", None) in ("List", "Dict", "Tuple", "Optional", "Union"):
                return self.type_value_of_annotation(node)
        base = self.expr(node.value)
        if isinstance(base, ClassRef):
            return self.type_value_of_annotation(node)
        return self.subscript_value(base, node.index, node, expected)

    def subscript_value(self, base, index: ast.Node, node, expected=None):
        if isinstance(base, SugaredTuple):
            return self.tuple_subscript(base.items, index, node, compile_time=True)
        if isinstance(base, SugaredModule):
            return self.module_subscript(base, index, node, expected)
        base = self.as_value(base, node)
        t = base.type
        if self.has_magic(base, "__getitem__"):
            return self.object_method(base, "__getitem__", [self.expr(index)], {}, node)
        if isinstance(t, TensorType):
            return self.tensor_getitem(base, index, node)
        if isinstance(t, TupleType):
            return self.tuple_subscript(self.tuple_items(base), index, node, compile_time=False)
        if isinstance(t, (ListType,)) or t == Str:
            kind = "list" if isinstance(t, ListType) else "str"
            if isinstance(index, ast.Slice):
                start, stop, step = self.slice_bounds(index)
                return self.emit1(f"slice.{kind}", [base, start, stop, step], t)
            value = self.expr(index)
            if isinstance(value, SliceValue):  # lst[slice(1, None, 2)], or a slice held in a variable
                start, stop = [self.const(None) if b is None else b for b in (value.start, value.stop)]
                step = self.const(1) if value.step is None else value.step
                return self.emit1(f"slice.{kind}", [base, start, stop, step], t)
            return self.emit1(f"getitem.{kind}", [base, self.integer_index(value, index)],
                              t.elem if kind == "list" else Str)
        if isinstance(t, DictType):
            return self.emit1("getitem.dict", [base, self.key_value(base, index)], t.value)
        raise self.error(f"a value of type {t} cannot be indexed", node)

    def index_value(self, index: ast.Node) -> Value:
        return self.integer_index(self.expr(index), index)

    def bound_value(self, bound: ast.Node) -> Value | None:
        """A slice bound: an int, or None for an expression that is None (`x[a:b]` with b a None
        unrolled from a tuple, as in torchvision's Swin)."""
        value = self.as_value(self.expr(bound), bound)
        if isinstance(value.type, TensorType):  # mask[(y_0 - box[1]):]: read as an int, as TorchScript's IntImplicit
            value = self.implicit_conversion(value, Int, from_tensor=True)
        return None if value.type == NoneType else self.integer_index(value, bound)

    def integer_index(self, value, index: ast.Node) -> Value:
        value = self.as_value(value, index)
        if value.type not in (Int, Bool):
            raise self.error(f"indices must be integers, not {value.type}", index)
        return value

    def key_value(self, container: Value, index: ast.Node) -> Value:
        key_type = container.type.key
        key = self.as_value(self.expr(index, key_type), index)
        return self.coerce(key, key_type, index, f"Arguments for call are not valid: a Dict[{key_type}, "
                           f"{container.type.value}] expected a value of type '{key_type}' for argument 'key' but "
                           f"instead found type '{key.type}'")

    def slice_bounds(self, node: ast.Slice) -> list[Value]:
        """start, stop (Optional[int]) and step (int) of a slice of a list or string."""
        out = []
        for part in (node.lower, node.upper):
            bound = None if part is None else self.bound_value(part)
            out.append(self.const(None) if bound is None else bound)
        step = self.const(1) if node.step is None else self.index_value(node.step)
        if self.static_int(step) == 0:
            raise self.error("slice step cannot be zero", node)
        return out + [step]

    def tuple_subscript(self, items: list, index: ast.Node, node, compile_time: bool):
        """A tuple indexed or sliced by constants; a non-constant index reads a list of the items
        (when they share a type)."""
        if isinstance(index, ast.Slice):
            bounds = [self.static_int(self.as_value(self.expr(p), p)) if p is not None else None
                      for p in (index.lower, index.upper, index.step)]
            if any(b is None for b, p in zip(bounds, (index.lower, index.upper, index.step)) if p is not None):
                raise self.error("tuple slices must be integer constants", index)
            return self.sequence_of(items[slice(*bounds)])
        position = self.index_value(index)
        constant = self.static_int(position)
        if constant is not None:
            if not -len(items) <= constant < len(items):
                raise self.error(f"Tuple index out of range. Tuple is length {len(items)} and index is {constant}", index)
            return items[constant]
        values = [self.as_value(v, node) for v in items]
        if not values or any(v.type != values[0].type for v in values):
            raise self.error("tuple indices must be integer constants (the items have different types)", index)
        listed = self.emit1("prim::ListConstruct", values, ListType(values[0].type))
        return self.emit1("getitem.list", [listed, position], values[0].type)

    # --- tensors ------------------------------------------------------------------------------------
    def index_items(self, index: ast.Node) -> list:
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        return [self.index_item(p) for p in parts]

    def index_item(self, node: ast.Node) -> indexing.Item:
        if isinstance(node, ast.Slice):
            start, stop, step = [None if p is None else self.bound_value(p) for p in (node.lower, node.upper,
                                                                                       node.step)]
            if step is not None and self.static_int(step) is not None and self.static_int(step) <= 0:
                raise self.error("step must be greater than zero", node)
            if step is not None and self.static_int(step) == 1:
                step = None
            return indexing.Item(indexing.SLICE, start=start, stop=stop, step=step)
        if isinstance(node, ast.Call) and self.builtin_name(node.func) == "slice":
            if not 1 <= len(node.args) <= 3 or node.keywords:
                raise self.error("slice() takes 1 to 3 positional arguments", node)
            bounds = [None if isinstance(a, ast.Constant) and a.value is None else self.index_value(a)
                      for a in node.args]
            start, stop, step = [None, bounds[0], None] if len(bounds) == 1 else (bounds + [None])[:3]
            return indexing.Item(indexing.SLICE, start=start, stop=stop, step=step)
        value = self.expr(node)
        if value is Ellipsis:
            return indexing.Item(indexing.ELLIPSIS)
        if isinstance(value, SliceValue):
            return indexing.Item(indexing.SLICE, start=value.start, stop=value.stop, step=value.step)
        value = self.as_value(value, node)
        t = value.type
        if t == NoneType:
            return indexing.Item(indexing.NEWAXIS)
        if t == Bool:
            constant = self.static_bool(value)
            if constant is None:
                raise self.error("a bool index must be a constant", node)
            return indexing.Item(indexing.BOOL, constant)
        if t == Int:
            return indexing.Item(indexing.INT, value)
        if isinstance(t, ListType):
            dtype = _index_dtype(t)
            if dtype is None:
                raise self.error(f"a tensor cannot be indexed by a value of type {t} (tensors used as indices "
                                 "must be long, int, byte or bool tensors)", node)
            value = self.emit1("tensor.data", [value, self.const(dtype), self.const(False)], TensorType())
            return indexing.Item(indexing.TENSOR, value)
        if isinstance(t, TensorType):
            dims = len(t.shape) if t.dtype is not None and t.dtype.name == "bool" and t.shape is not None else 1
            return indexing.Item(indexing.TENSOR, value, dims=dims)
        raise self.error(f"a tensor cannot be indexed by a value of type {t}", node)

    def index_op(self, node):
        def apply(name: str, args: tuple):
            op = ops.OPS[name]
            values = []
            for arg, param in zip(args, op.schema.args):
                if isinstance(arg, list):
                    arg = self.emit1("prim::ListConstruct", [a if a is not None else self.const(None) for a in arg],
                                     ListType(OptionalType(TensorType())))
                elif not isinstance(arg, Value):
                    arg = self.const(arg)
                elif isinstance(param.type, TensorType) and not isinstance(arg.type, TensorType):
                    arg = self.scalar_to_tensor(arg, node)
                values.append(arg)
            self.at(node)
            return self.emit_op(op, values, node)
        return apply

    def tensor_rank(self, value: Value) -> int | None:
        shape = value.type.shape if isinstance(value.type, TensorType) else None
        return len(shape) if shape is not None else None

    def tensor_getitem(self, base: Value, index: ast.Node, node) -> Value:
        items = self.index_items(index)
        try:
            return indexing.read(self.index_op(node), base, items, self.tensor_rank(base))
        except IndexError as exc:
            raise self.error(str(exc), node) from None

    def tensor_setitem(self, base: Value, index: ast.Node, value, node) -> None:
        items = self.index_items(index)
        value = self.as_value(value, node)
        if not isinstance(value.type, (TensorType,)) and value.type not in (Int, Bool) and \
                value.type != ops.parse_type("float") and value.type != ops.parse_type("complex"):
            raise self.error(f"a tensor element cannot be assigned a value of type {value.type}", node)
        try:
            indexing.write(self.index_op(node), base, items, self.tensor_rank(base), value)
        except IndexError as exc:
            raise self.error(str(exc), node) from None


def _index_dtype(t):
    """The dtype a (nested) list of ints or bools becomes as an index tensor, or None."""
    from scriptc.types import bool_, int64

    while isinstance(t, ListType):
        t = t.elem
    return {Int: int64, Float: int64, Bool: bool_}.get(t)  # TorchScript truncates a float list to longs
