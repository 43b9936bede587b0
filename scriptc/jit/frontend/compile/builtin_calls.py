"""The builtins that need their own lowering (builtins.py's SPECIAL names); torch.jit's and torch's
helpers are jit_calls.py's."""

from __future__ import annotations


from scriptc.ir.graph import Value
from scriptc.jit.arguments import union_name
from scriptc.jit.markers import bare_container_refusal
from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DictType,
    Float,
    Int,
    ListType,
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

from .. import ast
from ..builtins import BY_SCHEMA, NTUPLES
from .loops import Iteration
from .modules import user_method
from .types import assignable, make_union, members
from .values import (
    ClassRef,
    SliceValue,
    SugaredModule,
    SugaredTuple,
    TypeValue,
)

_NUMBERS = (Int, Float, Bool)


class BuiltinCalls:
    """call_builtin / call_jit and the argument-level lowerings (isinstance, annotate, getattr, fork)."""

    def call_builtin(self, name: str, args: list, kwargs: dict, node, expected=None):
        if len(args) == 1 and not kwargs and name in _MAGIC and self.has_magic(args[0], _MAGIC[name]):
            return self.object_method(args[0], _MAGIC[name], [], {}, node)  # len(obj): obj.__len__()
        if name == "sorted" and args and isinstance(args[0], Value) and isinstance(args[0].type, ListType) and \
                isinstance(args[0].type.elem, ObjectType):
            copied = self.emit1("copy.list", [args[0]], args[0].type)
            self.sort_objects(copied, kwargs.get("reverse"), node)
            return copied
        if name.startswith("math."):
            return self.python_op(name, args, kwargs, node)
        if name in BY_SCHEMA:
            if any(isinstance(a, Value) and isinstance(a.type, TensorType) for a in args):
                return self.call_op(name, args, kwargs, node)
            return self.python_op(name, args, kwargs, node)
        if name in NTUPLES:
            return self.ntuple(NTUPLES[name], self.one_argument(name, args, kwargs, node), node)
        handler = getattr(self, f"builtin_{name}", None)
        if handler is None:
            raise self.error(f"builtin '{name}' is not supported in scripted code", node)
        return handler(args, kwargs, node, expected)

    def ntuple(self, n: int, value, node) -> Value:
        """_pair(x) and its kin: a list of ints stays as it is, a tuple becomes a list, one int is n of it."""
        value = self.as_value(value, node)
        if value.type == Int:
            return self.emit1("prim::ListConstruct", [value] * n, ListType(Int))
        return self.as_list(value, node)

    def one_argument(self, name: str, args: list, kwargs: dict, node):
        if len(args) != 1 or kwargs:
            raise self.error(f"{name} expected exactly 1 arguments but found {len(args) + len(kwargs)}", node)
        return args[0]

    def length(self, value, node) -> Value:
        if isinstance(value, SugaredTuple):
            return self.const(len(value.items))
        if isinstance(value, SugaredModule):
            module = value.module
            custom = user_method(module, "__len__")
            if custom is not None:  # a container subclass's own __len__
                return self.inline_method(value, custom, [], {}, node)
            from scriptc.nn import ParameterDict, ParameterList
            parameters = isinstance(module, (ParameterList, ParameterDict))
            return self.const(len(module._parameters if parameters else module._modules))
        value = self.as_value(value, node)
        if isinstance(value.type, TupleType):
            return self.const(len(value.type.elems))
        if isinstance(value.type, TensorType):
            return self.emit1("len.tensor", [value], Int)
        return self.python_op("len", [value], {}, node, failure=f"object of type {value.type} has no len()")

    def builtin_len(self, args, kwargs, node, expected):
        return self.length(self.one_argument("len", args, kwargs, node), node)

    # --- conversions ---------------------------------------------------------------------------
    def builtin_int(self, args, kwargs, node, expected):
        return self.convert("int", Int, args, kwargs, node)

    def builtin_float(self, args, kwargs, node, expected):
        return self.convert("float", Float, args, kwargs, node)

    def convert(self, name: str, target, args, kwargs, node) -> Value:
        if not args and not kwargs:
            return self.const(0 if target == Int else 0.0)
        value = self.as_value(self.one_argument(name, args, kwargs, node), node)
        if value.type == target:
            return value
        if isinstance(value.type, TensorType):
            return self.emit1(f"{name}.tensor", [value], target)
        if value.type == Str:
            return self.emit1(f"{name}.str", [value], target)
        if value.type in _NUMBERS or value.type == Scalar:
            return self.emit1(f"{name}.scalar", [value], target)
        if self.has_magic(value, f"__{name}__"):  # a script-class object: its __int__ / __float__
            result = self.as_value(self.object_method(value, f"__{name}__", [], {}, node), node)
            return self.coerce(result, target, node, f"__{name}__ returned a {result.type}, not {target}")
        raise self.error(f"{name}() of a value of type {value.type} is not supported", node)

    def builtin_bool(self, args, kwargs, node, expected):
        if not args:
            return self.const(False)
        value = self.as_value(self.one_argument("bool", args, kwargs, node), node)
        return self.as_bool(value, node)

    def builtin_complex(self, args, kwargs, node, expected):
        values = [self.as_value(a, node) for a in args] + [self.as_value(v, node) for v in kwargs.values()]
        # complex(tensor, 2.0): TorchScript reads a one-element tensor as a number here
        values = [self.emit1("float.tensor", [v], Float) if isinstance(v.type, TensorType) else v for v in values]
        while len(values) < 2:
            values.append(self.const(0.0))
        if len(values) != 2 or not all(v.type in _NUMBERS + (Complex, Scalar) for v in values):
            raise self.error("complex() takes a real and an imaginary part (numbers)", node)
        if values[0].type == Complex or values[1].type == Complex:
            return self.python_op("complex", values, {}, node)
        return self.emit1("complex.scalar", values, Complex)

    def builtin_str(self, args, kwargs, node, expected):
        if not args:
            return self.const("")
        value = self.as_value(self.one_argument("str", args, kwargs, node), node)
        return value if value.type == Str else self.emit1("str.any", [value], Str)

    def builtin_type(self, args, kwargs, node, expected):
        """type(self).__name__ and the like: the class of a module or script object, known when compiling."""
        value = self.one_argument("type", args, kwargs, node)
        if isinstance(value, SugaredModule):
            return ClassRef(type(value.module), "module")
        if isinstance(value, Value) and isinstance(value.type, ObjectType):
            return ClassRef(self.ctx.class_named(value.type.name).cls, "class")
        raise self.error("type() in scripted code takes a module or a script-class object", node)

    def builtin_hash(self, args, kwargs, node, expected):
        value = self.as_value(self.one_argument("hash", args, kwargs, node), node)
        return self.emit1("hash.any", [value], Int)

    # --- containers ------------------------------------------------------------------------------
    def builtin_list(self, args, kwargs, node, expected):
        if not args:
            return self.emit1("prim::ListConstruct", [], self.container_hint(expected, ListType) or
                              ListType(TensorType()))
        value = self.one_argument("list", args, kwargs, node)
        if isinstance(value, (SugaredTuple, Iteration)) or isinstance(value, Value) and isinstance(value.type,
                                                                                                    TupleType):
            items = [self.as_value(v, node) for v in self.tuple_elements(value, node)] if not isinstance(
                value, Iteration) else None
            if items is None:
                return self.list_of_items(value, node)
            elem = self.element_type([v.type for v in items], node, "list") if items else TensorType()
            return self.emit1("prim::ListConstruct", items, ListType(elem))
        value = self.as_value(value, node)
        if isinstance(value.type, ListType):
            return self.emit1("copy.list", [value], value.type)
        if value.type == Str:
            return self.emit1("list.str", [value], ListType(Str))
        if isinstance(value.type, DictType):
            return self.emit1("keys.dict", [value], ListType(value.type.key))
        if isinstance(value.type, TensorType):
            return self.emit1("unbind", [value, self.const(0)], ListType(TensorType()))
        raise self.error(f"list() of a value of type {value.type} is not supported", node)

    def builtin_Size(self, args, kwargs, node, expected):  # noqa: N802  (torch.Size)
        sizes = self.builtin_list(args, kwargs, node, ListType(Int))
        if sizes.type != ListType(Int):
            raise self.error(f"torch.Size() takes a list or tuple of ints, got {sizes.type}", node)
        return sizes

    def builtin_tuple(self, args, kwargs, node, expected):
        value = self.one_argument("tuple", args, kwargs, node)
        if isinstance(value, SugaredTuple) or isinstance(value, Value) and isinstance(value.type, TupleType):
            return value
        raise self.error("cannot statically infer the expected size of a list in this context", node)

    def builtin_dict(self, args, kwargs, node, expected):
        target = self.container_hint(expected, DictType)
        if len(args) > 1:
            raise self.error("dict() takes at most one positional argument", node)
        if args:
            source = args[0]
            if isinstance(source, Iteration):
                source = self.list_of_items(source, node)
            source = self.as_value(source, node)
            if _empty_display(node.args[0]):  # dict([]), dict({})
                result = self.emit1("prim::DictConstruct", [], target or DictType(Str, TensorType()))
            elif isinstance(source.type, DictType):
                result = self.emit1("copy.dict", [source], target or source.type)
            elif isinstance(source.type, ListType) and isinstance(source.type.elem, TupleType) and \
                    len(source.type.elem.elems) == 2:
                key, value = source.type.elem.elems
                if target is not None:
                    self.check_generated_items(key, value, target, node)
                result = self.emit1("dict.list", [source], target or DictType(key, value))
            else:
                raise self.error(f"dict() of a value of type {source.type} is not supported", node)
        else:
            values = [self.as_value(v, node) for v in kwargs.values()]
            value_type = target.value if target else (self.element_type([v.type for v in values], node, "dict value")
                                                      if values else TensorType())
            result = self.emit1("prim::DictConstruct", [], target or DictType(Str, value_type))
            if not target and not values:
                return result
        for key, value in (kwargs.items() if args else kwargs.items()):
            value = self.as_value(value, node)
            item = self.coerce(value, result.type.value, node, f"dict() value for '{key}' has type {value.type}, "
                               f"not {result.type.value}")
            self.emit("setitem.dict", [result, self.const(key), item], [NoneType])
        return result

    def check_generated_items(self, key: Type, value: Type, target: DictType, node) -> None:
        """torch's refusal of dict() items whose types the annotation `target` does not hold."""
        if not assignable(key, target.key):
            if isinstance(key, (UnionType, OptionalType)):
                raise self.error(f"Dicts may only contain homogeneous keys, but the type of the first generated key "
                                 f"was {union_name(key)}", node)
            raise self.error(f"Dict type annotation `{target}` did not match the type of an actual key type `{key}`",
                             node)
        if not assignable(value, target.value):
            shown = union_name(value) if isinstance(value, (UnionType, OptionalType)) else value
            raise self.error(f"Dict type annotation `{target}` did not match the type of an actual value type "
                             f"`{shown}`", node)

    def list_of_items(self, iteration, node) -> Value:
        """A list of an iteration's items (range(), zip(), enumerate() used as values)."""
        if isinstance(iteration, list):
            items = [self.as_value(v, node) for v in iteration]
            elem = self.element_type([v.type for v in items], node, "list") if items else Int
            return self.emit1("prim::ListConstruct", items, ListType(elem))
        result = self.emit1("prim::ListConstruct", [], ListType(Int))
        appended = []

        def body(i):
            item = self.as_value(iteration.element(i), node)
            appended.append(self.emit("append.list", [result, item], [result.type]))
            return self.const(True)
        self.emit_loop(node, iteration.trip, self.const(True), [], body, set())
        if appended:
            result.type = ListType(appended[0].inputs[1].type)
            appended[0].outputs[0].type = result.type
        return result

    def builtin_min(self, args, kwargs, node, expected):
        return self.extreme("min", args, kwargs, node)

    def builtin_max(self, args, kwargs, node, expected):
        return self.extreme("max", args, kwargs, node)

    def extreme(self, name: str, args, kwargs, node):
        if len(args) == 1:
            value = args[0]
            if isinstance(value, SugaredTuple) or isinstance(value, Value) and isinstance(value.type, TupleType):
                args = self.tuple_elements(value, node)
            else:
                value = self.as_value(value, node)
                if isinstance(value.type, TensorType):
                    return self.call_op(name, [value], kwargs, node)
                return self.python_op(name, [value], kwargs, node, failure=f"{name}() of a value of type {value.type}")
        values = [self.as_value(a, node) for a in args]
        if len(values) < 2:
            raise self.error(f"{name}() expected at least one argument", node)
        numbers = [v.type for v in values if not isinstance(v.type, TensorType)]
        if len(numbers) < len(values) and all(t in (Int, Float) for t in numbers):
            # max(box[0], 0), max(t1, t2): TorchScript's prim::max of numbers, each tensor read as one (an int
            # unless a float is among them), as torchvision's paste_mask_in_image reads its boxes
            kind = Int if all(t == Int for t in numbers) else Float
            values = [self.implicit_conversion(v, kind, from_tensor=True) if isinstance(v.type, TensorType) else v
                      for v in values]
        if any(isinstance(v.type, TensorType) for v in values):
            result = values[0]
            for v in values[1:]:
                result = self.call_op(name, [result, v], {}, node)
            return result
        result = values[0]
        for v in values[1:]:
            result = self.python_op(name, [result, v], {}, node,
                                    failure=f"{name}() of values of types {result.type} and {v.type}")
        return result

    def builtin_print(self, args, kwargs, node, expected):
        values = [self.as_value(a, node) for a in args]
        sep = self.as_value(kwargs.pop("sep", self.const(" ")), node)
        end = self.as_value(kwargs.pop("end", self.const("\n")), node)
        if kwargs:
            raise self.error(f"print doesn't accept any keyword arguments (got '{sorted(kwargs)[0]}')", node)
        self.emit("print.any", [self.make_tuple(values), sep, end], [NoneType])
        return self.const(None)

    def builtin_warn(self, args, kwargs, node, expected):
        """warnings.warn(message[, category], stacklevel=...): a UserWarning with the message at run time,
        attributed to this line and given once per call of the scripted function (TorchScript's
        aten::warn: the category and stack level are not kept)."""
        if not args or len(args) > 3 or set(kwargs) - {"category", "stacklevel"}:
            raise self.error("warnings.warn() takes a message, and optionally a category and stacklevel", node)
        message = self.as_value(args[0], node)
        if message.type != Str:
            raise self.error(f"warnings.warn() takes a str message in scripted code, got {message.type}", node)
        place = [self.const(self.source.filename), self.const(node.line + self.source.line_offset),
                 self.const(node.col)]
        self.emit("warn.at", [message, *place], [NoneType])
        return self.const(None)

    def builtin_slice(self, args, kwargs, node, expected):
        """slice(stop) / slice(start, stop[, step]): a compile-time value that indexes (x[s])."""
        if kwargs:
            raise self.error("Slice does not accept any keyword arguments", node)
        if not 1 <= len(args) <= 3:
            raise self.error("slice() takes 1 to 3 positional arguments", node)
        bounds = [None if self.as_value(a, node).type == NoneType else self.as_value(a, node) for a in args]
        if any(b is not None and b.type != Int for b in bounds):
            raise self.error("slice() bounds must be ints or None", node)
        start, stop, step = [None, bounds[0], None] if len(bounds) == 1 else (bounds + [None])[:3]
        return SliceValue(start, stop, step)

    def builtin_id(self, args, kwargs, node, expected):
        raise self.error("id() is not supported in scripted code", node)

    builtin_iter = builtin_next = builtin_id

    # --- calls whose arguments are types or names -------------------------------------------------
    def raw_argument_call(self, name: str, node: ast.Call, expected):
        if name in ("range", "enumerate", "zip", "reversed"):
            return self.list_of_items(getattr(self, f"iterate_{name}")(node), node)
        if name in ("isinstance", "jit.isinstance"):
            if len(node.args) != 2 or node.keywords:
                raise self.error(f"{name}() takes exactly two arguments", node)
            value = self.expr(node.args[0])
            if name == "jit.isinstance":
                found, obj = self.lookup_object(node.args[1])
                refusal = bare_container_refusal(obj) if found else None
                if refusal is not None:
                    raise self.error(refusal, node.args[1])
            target = self.type_argument(node.args[1])
            self.at(node)
            if not isinstance(value, Value):
                return self.const(False)
            return self.isinstance_test(value, target, node)
        if name == "jit.annotate":
            if len(node.args) != 2:
                raise self.error("torch.jit.annotate(type, value) takes two arguments", node)
            target = self.annotation(node.args[0])
            value = self.as_value(self.expr(node.args[1], target), node.args[1])
            return self.coerce(value, target, node, f"torch.jit.annotate: a value of type {value.type} is not a "
                               f"{target}", from_tensor=True)
        if name == "jit._unwrap_optional":
            value = self.as_value(self.expr(node.args[0]), node.args[0])
            if not isinstance(value.type, OptionalType):
                return value
            self.emit_if(self.emit1("prim::IsNone", [value], Bool),
                         lambda: self.raises("AssertionError: Unwrapping null optional"), None)
            return self.emit1("prim::Refine", [value], value.type.elem)
        if name in ("getattr", "hasattr"):
            return self.attribute_by_name(name, node)
        return self.fork(node)

    def attribute_by_name(self, name: str, node: ast.Call):
        if len(node.args) not in (2, 3) or not isinstance(node.args[1], ast.Constant) or \
                not isinstance(node.args[1].value, str):
            raise self.error(f"{name}() needs an attribute name that is a string constant", node)
        attr = node.args[1].value
        if name == "getattr":
            if len(node.args) == 3 and not self.has_attribute(node.args[0], attr):
                return self.expr(node.args[2])
            return self.attribute(self.expr(node.args[0]), attr, node)
        return self.const(self.has_attribute(node.args[0], attr))

    def has_attribute(self, node: ast.Node, attr: str) -> bool:
        base = self.expr(node)
        if isinstance(base, SugaredModule):
            return self.module_has_attribute(base, attr)
        try:
            self.attribute(base, attr, node)
        except Exception:  # noqa: BLE001 - any failure to resolve means "no such attribute"
            return False
        return True

    # --- constants and types as values ----------------------------------------------------------------
    def container_constant(self, value, node, declared=None) -> Value:
        """A list/tuple/dict of Python constants built in the graph (lists are mutable, so never a
        shared prim::Constant)."""
        if isinstance(value, tuple):
            hints = declared.elems if isinstance(declared, TupleType) else [None] * len(value)
            return self.make_tuple([self.container_constant(v, node, h) for v, h in zip(value, hints)])
        if isinstance(value, list):
            hint = declared.elem if isinstance(declared, ListType) else None
            items = [self.container_constant(v, node, hint) for v in value]
            elem = hint or (self.element_type([v.type for v in items], node, "list") if items else TensorType())
            return self.emit1("prim::ListConstruct", items, ListType(elem))
        if isinstance(value, dict):
            keys = [self.const(k) for k in value]
            items = [self.container_constant(v, node) for v in value.values()]
            key_type = declared.key if isinstance(declared, DictType) else (keys[0].type if keys else Str)
            value_type = declared.value if isinstance(declared, DictType) else (
                self.element_type([v.type for v in items], node, "dict value") if items else TensorType())
            flat = [x for pair in zip(keys, items) for x in pair]
            return self.emit1("prim::DictConstruct", flat, DictType(key_type, value_type))
        if isinstance(value, ClassRef):
            raise self.error("a class cannot be used as a value here", node)
        return self.const(value)

    def type_value_of(self, obj, node) -> TypeValue:
        from .types import python_type

        return TypeValue(python_type(obj, self.class_type))

    def any_member_type(self, t):
        return make_union([m for m in members(t) if m != NoneType]) if t != Any_ else Any_


def _empty_display(node) -> bool:
    return isinstance(node, ast.List) and not node.elts or isinstance(node, ast.Dict) and not node.keys


# builtins that call a script-class object's method of the same meaning
_MAGIC = {"len": "__len__", "str": "__str__", "int": "__int__", "float": "__float__", "bool": "__bool__",
          "hash": "__hash__", "abs": "__abs__", "repr": "__repr__"}
