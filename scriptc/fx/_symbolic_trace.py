"""torch.fx symbolic tracing: run a module's forward on Proxies and record what it does into a Graph.

While a trace runs, nn.Module.__call__ and __getattr__ are patched (leaf modules become call_module
nodes, parameters get_attr nodes), fx.wrap()'d and autowrapped (math) functions record one
call_function node, and torch functions record theirs (see torch_functions); all is restored after.
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import types
from typing import Any, Callable

from scriptc.fx.graph import Graph
from scriptc.fx.node import has_side_effect
from scriptc.fx.proxy import ParameterProxy, Proxy, TracerBase
from scriptc.fx.torch_functions import Patcher, RecordingFunction, recording_torch_functions
from scriptc.utils import _pytree as pytree

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "is_fx_tracing"]

_TRACING = [False]
# (id of a module's globals, function name) -> those globals: the functions fx.wrap() registered.
_WRAPPED_FUNCTIONS: dict[tuple[int, str], dict] = {}


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running."""
    return _TRACING[0]


class PHBase:
    """The placeholder marker of concrete_args: a value left as an input inside a concrete structure."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def _assert_is_none(value, message: str) -> None:
    assert value is None, message


def wrap(fn_or_name):
    """torch.fx.wrap: call at module scope so that calls to that global function (or the function
    named) are recorded as one call_function node instead of being traced through; returns its argument."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    name = fn_or_name.__name__ if callable(fn_or_name) else fn_or_name
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAPPED_FUNCTIONS[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _patch_wrapped_functions(patcher: Patcher) -> None:
    for (_, name), frame_dict in list(_WRAPPED_FUNCTIONS.items()):
        original = frame_dict[name] if name in frame_dict else getattr(builtins, name)
        patcher.patch(frame_dict, name, RecordingFunction(original, mark_wrapped=True))


def _positional_code(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """fn with *args/**kwargs (and keyword-only parameters) taken as plain positional parameters, so a
    trace can pass one Proxy for each."""
    code = fn.__code__.replace(co_argcount=nargs, co_kwonlyargcount=0,
                               co_flags=fn.__code__.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Tracer(TracerBase):
    """Symbolic tracer: `Tracer().trace(root)` returns the Graph of root's forward (or of a function).

    Override is_leaf_module to choose which submodules stay call_module nodes, create_proxy /
    create_node / create_arg to annotate or rewrite what is recorded, call_module / getattr for
    module-level behaviour, to_bool / iter for control flow on traced values."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_function_ids = {id(value) for module in autowrap_modules
                                       for name, value in vars(module).items()
                                       if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.tensor_attrs: dict = {}

    def get_fresh_qualname(self, prefix: str) -> str:
        """An attribute name `prefix<N>` not yet taken on the root module."""
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    def create_arg(self, a: Any):
        """Parameters, buffers and submodules of the root become get_attr nodes; other tensors become
        constants stored on the root as `_tensor_constant<N>`."""
        from scriptc.nn import Module, Parameter
        from scriptc.tensors import Tensor
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for name, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", name, (), {})
        elif isinstance(a, Module):
            for name, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", name, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return self.create_node("call_function", type(a), tuple(self.create_arg(e) for e in a), {})
        if isinstance(a, Tensor):
            qualname = next((name for t, name in self.tensor_attrs.items() if t is a), None)
            if qualname is None:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Whether a submodule call stays one call_module node: torch.nn's own modules (scriptc.nn's
        here) do, except Sequential; user modules are traced through."""
        from scriptc.nn import Sequential
        return m.__module__.startswith(("scriptc.nn", "torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of a submodule of the root (`layer1.0.conv1`)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, m in self.root.named_modules():
            if mod is m:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict):
        """A leaf module becomes a call_module node; any other module's forward is traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict):
        """Reading a parameter (or buffer) of the root inside forward gives one get_attr Proxy per name."""
        from scriptc.nn import Parameter
        from scriptc.tensors import Tensor
        if isinstance(attr_val, Parameter):
            collection = self.root.named_parameters()
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            collection = self.root.named_buffers()
        else:
            return attr_val
        for name, value in collection:
            if attr_val is value:
                if name not in parameter_proxy_cache:
                    options = {}
                    # A custom tracer's create_proxy may predate proxy_factory_fn: pass it only when taken.
                    if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                        options["proxy_factory_fn"] = (lambda node: ParameterProxy(self, node, name, attr_val)) \
                            if self.param_shapes_constant and isinstance(attr_val, Parameter) else None
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {}, **options)
                return parameter_proxy_cache[name]
        return attr_val

    def create_args_for_root(self, root_fn: Callable, is_module: bool, concrete_args=None):
        """Placeholders for root_fn's parameters (concrete_args fixed); returns (fn to call, its args)."""
        code = inspect.unwrap(root_fn).__code__
        names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        args: list[Any] = []
        if is_module:
            if not names:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            names.pop(0)
            args.append(self.root)
        if isinstance(concrete_args, tuple):
            if len(names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(names)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(names, concrete_args))
        signature = inspect.signature(inspect.unwrap(root_fn))
        rest = code.co_argcount + code.co_kwonlyargcount
        if code.co_flags & inspect.CO_VARARGS:
            names.append("*" + code.co_varnames[rest])
            rest += 1
        if code.co_flags & inspect.CO_VARKEYWORDS:
            names.append("**" + code.co_varnames[rest])
        args.extend(self._proxy_placeholder(name, concrete_args, signature, root_fn) for name in names)
        if code.co_kwonlyargcount or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            root_fn = _positional_code(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, concrete_args: dict | None, signature: inspect.Signature, fn):
        import scriptc
        if concrete_args is not None and name in concrete_args:
            count = [0]
            parameter = signature.parameters[name]
            default = () if parameter.default is inspect.Parameter.empty else (parameter.default,)

            def replace_placeholder(x):
                count[0] += 1
                out = self.create_proxy("placeholder", f"{name}_{count[0]}", default, {})
                if isinstance(x, PHBase):
                    return out
                if type(x) in (bool, int, float, str, complex):
                    self.create_proxy("call_function", scriptc._assert,
                                      (out == x, f"{name} has been specialized to have value {x} but got another "
                                                 "value"), {})
                elif x is None:
                    self.create_proxy("call_function", _assert_is_none,
                                      (out, f"{name} has been specialized to have value None but got another "
                                            "value"), {})
                return x
            return pytree.tree_map(replace_placeholder, concrete_args[name])
        default = ()
        if name[0] != "*":
            parameter = signature.parameters[name]
            default = () if parameter.default is inspect.Parameter.empty else (parameter.default,)
        annotation = getattr(inspect.unwrap(fn), "__annotations__", {}).get(name.lstrip("*"))
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=None if isinstance(annotation, str) else annotation)

    def trace(self, root, concrete_args: dict | tuple | None = None) -> Graph:
        """The Graph of root.forward (root an nn.Module) or of root itself (a function)."""
        from scriptc.nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}
        self._collect_tensor_attrs(self.root, [])
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        parameter_proxy_cache: dict[str, Proxy] = {}
        original_getattr, original_call = Module.__getattr__, Module.__call__

        def module_getattr(mod, attr: str):
            return self.getattr(attr, original_getattr(mod, attr), parameter_proxy_cache)

        def module_call(mod, *args, **kwargs):
            def forward(*args, **kwargs):
                return original_call(mod, *args, **kwargs)
            self._autowrap(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}))
            return self.call_module(mod, forward, args, kwargs)

        patcher = Patcher()
        was_tracing, _TRACING[0] = _TRACING[0], True
        try:
            with recording_torch_functions():
                patcher.patch_method(Module, "__getattr__", module_getattr)
                patcher.patch_method(Module, "__call__", module_call)
                _patch_wrapped_functions(patcher)
                self._autowrap(patcher, fn_globals)
                for module in self._autowrap_search:
                    self._autowrap(patcher, vars(module))
                result = fn(*args)
                return_type = getattr(inspect.unwrap(fn), "__annotations__", {}).get("return")
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=None if isinstance(return_type, str) else return_type)
        finally:
            patcher.restore()
            _TRACING[0] = was_tracing
            self.submodule_paths = None
        return self.graph

    def _autowrap(self, patcher: Patcher, frame_dict: dict) -> None:
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and id(value) in self._autowrap_function_ids:
                patcher.patch(frame_dict, name, RecordingFunction(value, mark_wrapped=True))

    def _collect_tensor_attrs(self, module, prefix: list[str]) -> None:
        from scriptc.tensors import Tensor
        for name, value in vars(module).items():
            if isinstance(value, Tensor):
                self.tensor_attrs[value] = ".".join(prefix + [name])
        for name, child in module.named_children():
            self._collect_tensor_attrs(child, prefix + [name])


has_side_effect(_assert_is_none)
has_side_effect(operator.setitem)


def symbolic_trace(root, concrete_args: dict | None = None):
    """Trace an nn.Module or a function into a GraphModule (torch.fx.symbolic_trace). concrete_args
    fixes some inputs to constants (control flow on them is then resolved at trace time)."""
    from scriptc.fx.graph_module import GraphModule
    from scriptc.nn import Module
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
