"""What a global name means: the Python object it is bound to (the function's globals, closure and
builtins) turned into a compile-time value (values.py) or a constant."""

from __future__ import annotations

import builtins
import enum
import inspect
import types
import typing

from scriptc import ops
from scriptc.legacy import _LegacyTensorType
from scriptc.sparse import layout
from scriptc.tensors import Size
from scriptc.types import device, dtype

from .. import ast
from ..builtins import MATH_CONSTANTS, builtin_of, math_function_of
from .types import is_enum_class, is_namedtuple_class
from .values import (
    Builtin,
    ClassRef,
    JitFunction,
    OpFunction,
    OverloadedFunction,
    PythonNamespace,
    SugaredTuple,
    TracedFunction,
    UserFunction,
)

_MISSING = object()
_LAYOUT_NUMBERS = {"strided": 0, "sparse_coo": 1}  # c10::Layout's values


def python_call(module, name: str):
    """A function calling `module` in Python, which scripted code calls as a @jit.ignore'd one (its
    result a Tensor, as torch takes a Python value's)."""
    def call(*args):
        return module(*args)
    call.__name__ = call.__qualname__ = name
    call._scriptc_ignore = True
    return call


def jit_functions() -> dict[int, str]:
    """id of each torch.jit (and torch) helper with a meaning in script -> its name."""
    import scriptc
    from scriptc import jit

    named = {"annotate": jit.annotate, "isinstance": jit.isinstance, "fork": jit.fork, "wait": jit.wait,
             "is_scripting": jit.is_scripting, "is_tracing": jit.is_tracing, "_unwrap_optional": jit._unwrap_optional,
             "autograd.grad": scriptc.autograd.grad, "set_num_threads": scriptc.set_num_threads,
             "get_num_threads": scriptc.get_num_threads, "set_num_interop_threads": scriptc.set_num_interop_threads,
             "get_num_interop_threads": scriptc.get_num_interop_threads, "tensor": scriptc.tensor,
             "as_tensor": scriptc.as_tensor, "is_tensor": scriptc.is_tensor, "_assert": getattr(scriptc, "_assert", None),
             "no_grad": scriptc.no_grad, "enable_grad": scriptc.enable_grad, "is_grad_enabled": scriptc.is_grad_enabled,
             "_get_tracing_state": scriptc._C._get_tracing_state, "_check": jit.markers._check,
             "manual_seed": scriptc.manual_seed, "Generator": scriptc.Generator,
             "_IgnoreContextManager": jit._IgnoreContextManager, "device": scriptc.device}
    ids = {id(obj): name for name, obj in named.items() if obj is not None}
    # an Await is a Future in scripted code: _awaitable forks the call, _awaitable_wait waits for it
    ids.update({id(jit._awaitable): "fork", id(jit._awaitable_wait): "wait",
                id(jit._awaitable_nowait): "awaitable_nowait"})
    return ids


def prepared_function(fn):
    """What to compile for the function `fn`: what its `__prepare_scriptable__` returns where it has
    one (a decorator's wrapper naming the function it wraps), as torch.jit.script does."""
    prepare = getattr(fn, "__prepare_scriptable__", None)
    return prepare() if callable(prepare) else fn


class Resolver:
    """Global lookup and the compile-time meaning of Python objects."""

    def resolve_global(self, name: str, node: ast.Node):
        obj = self.globals.get(name, _MISSING)
        if obj is _MISSING:
            obj = getattr(builtins, name, _MISSING)
        if obj is _MISSING:
            raise self.error(f"undefined value {name}", node)
        return self.sugar(obj, name, node)

    def lookup_object(self, node: ast.Node) -> tuple[bool, object]:
        """(found, the Python object) a dotted name refers to, without compiling anything."""
        if isinstance(node, ast.Name):
            if self.lookup(node.id) is not None:
                return False, None
            obj = self.globals.get(node.id, _MISSING)
            if obj is _MISSING:
                obj = getattr(builtins, node.id, _MISSING)
            return obj is not _MISSING, obj
        if isinstance(node, ast.Attribute):
            found, base = self.lookup_object(node.value)
            if not found:
                return False, None
            obj = getattr(base, node.attr, _MISSING)
            return obj is not _MISSING, obj
        return False, None

    def builtin_name(self, node: ast.Node) -> str | None:
        """'range', 'jit.isinstance', ... when `node` names a builtin or a torch.jit helper."""
        found, obj = self.lookup_object(node)
        if not found:
            return None
        name = builtin_of(obj)
        if name is not None:
            return name
        jit_name = self.ctx.jit_functions.get(id(obj))
        return f"jit.{jit_name}" if jit_name is not None else None

    def sugar(self, obj, name: str, node: ast.Node):
        """The compile-time value (or constant) for the Python object `obj`, named `name` in the source."""
        if obj is None or isinstance(obj, (bool, int, float, complex, str, dtype, device)):
            return self.const(obj)
        if obj is Ellipsis:
            return Ellipsis
        if isinstance(obj, types.ModuleType):
            return PythonNamespace(obj)
        jit_name = self.ctx.jit_functions.get(id(obj))
        if jit_name is not None:
            return JitFunction(jit_name)
        builtin = builtin_of(obj)
        if builtin is not None:
            return Builtin(builtin)
        math_name = math_function_of(obj)
        if math_name is not None:
            return Builtin(math_name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return ClassRef(obj, "exception")
        if isinstance(obj, layout):  # torch.strided: an int in scripted code (c10's Layout), as x.layout is
            return self.const(_LAYOUT_NUMBERS[obj.name])
        if obj is Size:  # torch.Size is List[int] in scripted code
            return Builtin("Size")
        if isinstance(obj, enum.Enum):
            return self.enum_constant(obj)
        op_name = getattr(obj, "_scriptc_op", None)
        if op_name is not None and getattr(obj, "_scriptc_aten", False):  # torch.ops.aten.<name>
            return OpFunction(op_name, aten=True)
        if op_name is not None:
            return OpFunction(op_name, namespaced=True)
        scripted = getattr(obj, "_scriptc_source", None)
        if scripted is not None:  # a function already compiled with jit.script
            return UserFunction(scripted)
        from scriptc.jit.module import ScriptFunction, ScriptModule
        from scriptc.nn import Module

        if isinstance(obj, ScriptFunction):  # one jit.trace made
            return TracedFunction(obj)
        if isinstance(obj, ScriptModule):
            raise self.error("Cannot call a ScriptModule that is not a submodule of the caller", node)
        if isinstance(obj, Module):  # a module of the enclosing scope: called in Python, as torch calls it
            return UserFunction(python_call(obj, name))
        if isinstance(obj, type):
            return self.class_ref(obj, name, node)
        if inspect.isfunction(obj):
            obj = prepared_function(obj)
            declarations = self.ctx.overloads_of(obj)
            return OverloadedFunction(obj, declarations) if declarations else UserFunction(obj)
        if callable(obj) and getattr(inspect.getattr_static(type(obj), "__call__", None), "_scriptc_ignore", False):
            return UserFunction(obj.__call__)  # an object whose __call__ is @jit.ignore'd: called in Python
        if isinstance(obj, tuple):
            return SugaredTuple([self.sugar(item, name, node) for item in obj])
        if isinstance(obj, (list, dict)) and _constant_container(obj):
            return self.container_constant(obj, node)
        if typing.get_origin(obj) is not None or obj in (typing.Any,):
            return self.type_value_of(obj, node)
        raise self.error(f"'{name}' ({type(obj).__name__}) cannot be used in a scripted function", node)

    def class_ref(self, cls, name: str, node):
        from scriptc.nn import Module

        if is_namedtuple_class(cls):
            return ClassRef(cls, "namedtuple")
        if is_enum_class(cls):
            return ClassRef(cls, "enum")
        if issubclass(cls, Module):
            return ClassRef(cls, "module")
        if cls in (typing.Any,):
            return ClassRef(cls, "type")
        if isinstance(cls, _LegacyTensorType):
            return ClassRef(cls, "legacy_tensor")
        return ClassRef(cls, "class")

    def namespace_attribute(self, namespace: PythonNamespace, name: str, node: ast.Node):
        module = namespace.module
        if module.__name__ == "math" and name in MATH_CONSTANTS:
            return self.const(MATH_CONSTANTS[name])
        obj = getattr(module, name, _MISSING)
        if obj is _MISSING:
            if module.__name__ == "scriptc":
                if any(op.function for op in ops.overloads(name)):
                    return OpFunction(name)
                raise self.error(f"object has no attribute {name} (torch.{name} is not in scriptc's op table)", node)
            raise self.error(f"module '{_public_name(module)}' has no attribute '{name}' in scripted code", node)
        return self.sugar(obj, f"{_public_name(module)}.{name}", node)


def _constant_container(obj) -> bool:
    if isinstance(obj, dict):
        return all(_constant_container(k) and _constant_container(v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return all(_constant_container(v) for v in obj)
    return obj is None or isinstance(obj, (bool, int, float, complex, str))


def _public_name(module) -> str:
    return module.__name__.replace("scriptc", "torch", 1)
