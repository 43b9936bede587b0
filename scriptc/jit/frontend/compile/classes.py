"""User classes in script: @torch.jit.script classes (objects with typed attributes and compiled
methods), NamedTuples (typed tuples with field names) and Enums (constant members)."""

from __future__ import annotations

import dataclasses
import inspect

from scriptc.errors import FrontendError
from scriptc.ir.graph import Value
from scriptc.types import Bool, EnumValue, Int, InterfaceType, ListType, NamedTupleType, ObjectType, Str, Type

from .. import ast
from .types import AnnotationError, annotations_of, enum_type, is_enum_class, is_namedtuple_class, python_type
from .values import ClassRef


class Classes:
    """Construction, attributes and methods of user classes."""

    def class_type(self, cls):
        """The IR type an annotation naming the class `cls` means (None: not a class script knows)."""
        from scriptc.nn import Module

        if is_namedtuple_class(cls):
            return self.namedtuple_type(cls)
        if is_enum_class(cls):
            return enum_type(cls)
        if getattr(cls, "_scriptc_interface", False):
            return self.interface_type(cls)
        if issubclass(cls, Module):
            from scriptc.types import ModuleType
            return ModuleType()
        if cls.__module__ == "builtins":
            return None
        return ObjectType(self.ctx.script_class(cls, self, ast.Node(self.line, self.col)).name)

    def namedtuple_type(self, cls) -> NamedTupleType:
        from scriptc.jit.arguments import NAMEDTUPLE_CLASSES

        hints = annotations_of(cls)
        try:
            elems = tuple(python_type(hints[f], self.class_type) if f in hints else
                          python_type("Tensor") for f in cls._fields)
        except AnnotationError as exc:
            raise self.error(f"NamedTuple {cls.__name__}: {exc}") from None
        t = NamedTupleType(elems, cls.__qualname__, tuple(cls._fields))
        # (two NamedTuples of one name in one script are one type to torch: another definition is refused)
        if self.ctx.namedtuple_types.setdefault(cls.__qualname__, t) != t:
            where = "" if cls.__module__ == "__main__" else f"{cls.__module__}."
            raise self.error(f"Can't redefine NamedTuple: __torch__.{where}{cls.__qualname__}")
        NAMEDTUPLE_CLASSES[cls.__qualname__] = cls  # results of this type come back as instances of cls
        return t

    def construct(self, ref: ClassRef, args: list, kwargs: dict, node):
        kind = ref.kind
        if kind == "namedtuple":
            return self.construct_namedtuple(ref.cls, args, kwargs, node)
        if kind == "class":
            return self.construct_object(ref.cls, args, kwargs, node)
        if kind == "legacy_tensor":
            return self.construct_legacy_tensor(ref.cls, args, kwargs, node)
        if kind == "exception":
            raise self.error(f"{ref.cls.__name__} object cannot be used as a value: exceptions can only be raised "
                             "(`raise Exception(...)`) in scripted code", node)
        if kind == "enum":
            raise self.error("Enum members are read as attributes (Color.RED) in scripted code", node)
        raise self.error(f"Cannot instantiate class '{ref.cls.__name__}' in a script function", node, FrontendError)

    def construct_namedtuple(self, cls, args: list, kwargs: dict, node) -> Value:
        t = self.namedtuple_type(cls)
        defaults = getattr(cls, "_field_defaults", {})
        values = []
        for i, (field, elem) in enumerate(zip(t.fields, t.elems)):
            if i < len(args):
                v = args[i]
            elif field in kwargs:
                v = kwargs[field]
            elif field in defaults:
                v = self.container_constant(defaults[field], node, elem)
            else:
                raise self.error(f"{cls.__name__}() missing required argument '{field}'", node)
            v = self.as_value(v, node)
            values.append(self.coerce(v, elem, node, f"{cls.__name__}(): Expected a value of type '{elem}' for argument "
                                      f"'{field}' but instead found type '{v.type}'."))
        if len(args) > len(t.fields):
            raise self.error(f"{cls.__name__}() takes {len(t.fields)} arguments but {len(args)} were given", node)
        return self.emit1("prim::TupleConstruct", values, t)

    def construct_legacy_tensor(self, cls, args: list, kwargs: dict, node) -> Value:
        """torch.LongTensor(2, 3) (uninitialized, of those sizes), torch.LongTensor(data) or
        torch.LongTensor() (empty), the two schemas TorchScript gives the legacy typed constructors."""
        schemas = ("\nLegacy Tensor Constructor only supports two schemas in TorchScript: \n"
                   "'new(IntArrayRef size, *, Device? device=None)',\n'new(PyObject* data, *, Device? device=None)\n'")
        for name in kwargs:
            if name != "device":
                raise self.error(f"{schemas}Got kwarg {name}", node)
        values = [self.as_value(a, node) for a in args] or [self.as_value(self.const(0), node)]
        options = {"dtype": self.const(cls.dtype), **kwargs}
        if all(v.type == Int for v in values):
            sizes = self.emit1("prim::ListConstruct", values, ListType(Int))
            return self.call_op("empty", [sizes], options, node)
        if len(values) > 1:
            raise self.error(f"{schemas}Got multiple positional arguments that were not all integers", node)
        return self.tensor_literal("tensor", values, options, node)

    def construct_object(self, cls, args: list, kwargs: dict, node) -> Value:
        if cls.__module__.partition(".")[0] == "scriptc":
            # a library class that is no builtin (torch.finfo): its Python source is not the user's to compile
            raise self.error(f"Unknown builtin op: aten::{cls.__name__}.", node)
        if any(base.__module__ == "builtins" and base is not object for base in cls.__mro__[1:]):
            raise self.error(f"{cls.__name__}(...) cannot be called in scripted code (a subclass of a Python "
                             f"builtin type is not a script class)", node)
        if getattr(cls, "_scriptc_ignore", False):  # an @torch.jit.ignore'd class stays Python's
            raise self.error(f"Cannot instantiate class '{cls.__name__}' in a script function", node, FrontendError)
        has_init = inspect.isfunction(getattr(cls, "__init__", None))
        if not has_init and (args or kwargs):
            raise self.error(f"{cls.__name__}() takes no arguments", node)
        script_class = self.ctx.script_class(cls, self, node)
        obj = self.emit1("prim::CreateObject", [], ObjectType(script_class.name), {"class": script_class.name})
        if has_init:
            self.call_method_function(script_class, "__init__", obj, args, kwargs, node)
        return obj

    def call_method_function(self, script_class, name: str, obj: Value, args: list, kwargs: dict, node):
        graph, function = self.ctx.method_graph(script_class, name, self, node)
        fn = getattr(script_class.cls, name)
        values = [obj] + self.bind_python(fn, graph.inputs[1:], args, kwargs, node, skip=1)
        self.at(node)
        result = self.emit("prim::Call", values, [o.type for o in graph.outputs], {"function": function})
        return result.output

    def object_attribute(self, obj: Value, name: str, node):
        if isinstance(obj.type, InterfaceType):  # a class interface's value has its methods only
            from .interfaces import interface_methods
            from .values import MethodRef

            if name not in interface_methods(self.ctx.interfaces[obj.type.name]):
                raise self.error(f"'__torch__.{obj.type.name}' object has no attribute or method '{name}'.", node)
            return MethodRef(obj, name)
        script_class = self.ctx.class_named(obj.type.name)
        if name in script_class.attributes:
            return self.emit1("prim::GetAttr", [obj], script_class.attributes[name], {"name": name})
        member = inspect.getattr_static(script_class.cls, name, None)
        if isinstance(member, property):
            return self.call_method_function(script_class, name, obj, [], {}, node)
        if inspect.isfunction(member):
            from .values import MethodRef
            return MethodRef(obj, name)
        if member is not None and not callable(member):
            return self.constant_attribute(member, f"{script_class.cls.__name__}.{name}", node)
        qualname = script_class.cls.__qualname__.replace("<locals>.", "")
        raise self.error(f"'__torch__.{qualname}' object has no attribute or method '{name}'. Did you forget to "
                         "initialize an attribute in __init__()?", node)

    def object_method(self, obj: Value, name: str, args: list, kwargs: dict, node):
        script_class = self.ctx.class_named(obj.type.name)
        member = inspect.getattr_static(script_class.cls, name, None)
        if not inspect.isfunction(member):
            raise self.error(f"'{script_class.cls.__name__}' object has no method '{name}'", node)
        return self.call_method_function(script_class, name, obj, args, kwargs, node)

    def has_magic(self, value, name: str) -> bool:
        """Whether `value` (a value or a type) is a script-class object whose class defines the
        method `name` (__len__, __getitem__, __add__, __eq__, ...), which Python's syntax then calls."""
        t = value.type if isinstance(value, Value) else value
        if not isinstance(t, ObjectType) or isinstance(t, InterfaceType):
            return False
        script_class = self.ctx.class_named(t.name)
        return inspect.isfunction(inspect.getattr_static(script_class.cls, name, None))

    def compares_with_itself(self, t: ObjectType, name: str) -> bool:
        """Whether the class's method `name` (__lt__) takes one more of its objects and (where its
        return is declared) returns a bool."""
        try:
            params, returns = self.ctx.method_types(self.ctx.class_named(t.name).cls.__dict__[name])
        except Exception:  # noqa: BLE001 - (compiling the method reports what is wrong with it)
            return True
        return len(params) == 1 and params[0] == t and returns in (None, Bool)

    def sort_objects(self, items: Value, reverse, node) -> None:
        """list.sort() of script-class objects, by their class's __lt__ (templates.sort_by_lt)."""
        from . import templates

        t = items.type.elem
        if not self.has_magic(t, "__lt__") or not self.compares_with_itself(t, "__lt__"):
            raise self.error(f"To sort a list of {t} it must define a __lt__ method with two inputs of type {t} that "
                             "returns a bool", node)
        reverse = self.as_value(reverse, node) if reverse is not None else self.const(False)
        self.ctx.inline_template(templates.sort_by_lt, {"items": items, "reverse": reverse}, self, node)

    def set_object_attribute(self, obj: Value, name: str, value: Value, node) -> None:
        script_class = self.ctx.class_named(obj.type.name)
        declared = script_class.attributes.get(name)
        if declared is None:
            if not script_class.defining:
                raise self.error(f"Tried to set nonexistent attribute: {name}. Did you forget to initialize it in "
                                 f"__init__()? ('{script_class.cls.__name__}' objects get their attributes there)",
                                 node)
            if _contains_class(value.type, script_class.name):
                raise self.error(f"Assignment to attribute '{name}' cannot be of a type that contains class "
                                 f"'__torch__.{script_class.name}'.\nClasses that recursively contain instances of "
                                 "themselves are not yet supported", node)
            declared = self.ctx.declare_attribute(script_class, name, value.type)
        value = self.coerce(value, declared, node, f"Wrong type for attribute assignment. Expected {declared} but "
                            f"got {value.type} (attribute '{name}')")
        self.emit("prim::SetAttr", [obj, value], [], {"name": name})

    # --- NamedTuple fields and Enum members ---------------------------------------------------------
    def tuple_field(self, value: Value, name: str, node):
        t = value.type
        if isinstance(t, NamedTupleType) and name in t.fields:
            return self.tuple_items(value)[t.fields.index(name)]
        raise self.error(f"'{t}' has no attribute '{name}'", node)

    def class_attribute(self, ref: ClassRef, name: str, node):
        cls = ref.cls
        if ref.kind == "enum":
            member = getattr(cls, name, None)
            if isinstance(member, cls):
                return self.enum_constant(member)
        if name in ("__name__", "__qualname__"):
            return self.const(getattr(cls, name))
        member = inspect.getattr_static(cls, name, None)
        if isinstance(member, staticmethod):
            from .values import UserFunction
            return UserFunction(member.__func__)
        if member is not None and not callable(member) and not isinstance(member, (property, classmethod)):
            return self.constant_attribute(member, f"{cls.__name__}.{name}", node)
        raise self.error(f"'{cls.__name__}' has no attribute '{name}' usable in scripted code", node)

    def enum_constant(self, member) -> Value:
        t = enum_type(type(member))
        value = EnumValue(t.name, member.name, member.value)
        self.ctx.enum_classes[t.name] = type(member)
        from scriptc.jit.arguments import ENUM_CLASSES

        ENUM_CLASSES[t.name] = type(member)
        return self.emit1("prim::Constant", [], t, {"value": value})

    def enum_members(self, ref: ClassRef) -> list:
        return [self.enum_constant(m) for m in ref.cls]

    def enum_property(self, value: Value, name: str, node):
        t = value.type
        if name == "name":
            return self.emit1("name.enum", [value], Str)
        if name == "value":
            return self.emit1("value.enum", [value], t.value)
        raise self.error(f"'{t.name}' members have only .name and .value in scripted code", node)


def _contains_class(t: Type, name: str) -> bool:
    """Whether type `t` is, or is built from, the script class `name`."""
    if type(t) is ObjectType:
        return t.name == name
    if not dataclasses.is_dataclass(t):
        return False
    parts = [getattr(t, f.name) for f in dataclasses.fields(t)]
    inner = [p for part in parts for p in (part if isinstance(part, tuple) else (part,)) if isinstance(p, Type)]
    return any(_contains_class(p, name) for p in inner)
