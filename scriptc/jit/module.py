"""ScriptModule, TracedModule and ScriptFunction: callable graphs with their module's state."""

from __future__ import annotations

import contextlib
import inspect
import io
import textwrap
from typing import Any

from scriptc.errors import CallError
from scriptc.ir.graph import Graph, walk
from scriptc.nn.module import Module
from scriptc.grad_mode import is_grad_enabled, set_grad_enabled
from scriptc.ops.strings import one_warning_per_call
from scriptc.ir.printer import graph_code
from scriptc.runtime.input_dims import check_input_dims
from scriptc.runtime.interpreter import Interpreter, ModuleValue
from scriptc.types import SCALAR_TYPE_NUMBERS, dtype
from scriptc.tensors import Tensor, _tracer
from scriptc.tensors.dispatch import wants_grad

from .arguments import convert_arguments, typed_result
from .markers import Attribute
from .eager import EagerInterpreter, reads_autograd
from .module_types import ModuleClassType, ModuleHandle
from .module_values import (LiveModuleValue, attribute_copy, eager_value, from_runtime, module_state_copy, same_value,
                            to_runtime)
from .traced_children import trace_child


_CALL_SCOPED_OPS = ("warn.at", "grad_mode.switch")


def needs_call_scope(*graphs: Graph) -> bool:
    """Whether the graphs warn or switch grad mode, so a call of them must run as a scripted_call."""
    return any(node.op in _CALL_SCOPED_OPS for graph in graphs for node in walk(graph.block))


@contextlib.contextmanager
def scripted_call():
    """One call into scripted code: each warnings.warn site warns once, and the grad mode the call
    found is back when it ends (also when an exception leaves a no_grad() region early)."""
    with one_warning_per_call(), set_grad_enabled(is_grad_enabled()):
        yield


def by_array(arguments) -> dict:
    """The Tensors among a call's arguments (top level), by the id of the array the runtime gets."""
    return {id(a._data): a for a in arguments if isinstance(a, Tensor)}


def results(outputs: list, arguments, graph: Graph) -> Any:
    """A runtime call's outputs as the Python call returns them: one value, or a tuple of them (typed
    by the graph's outputs: NamedTuples as their classes)."""
    given = by_array(arguments)
    values = [typed_result(from_runtime(o, given), v.type) for o, v in zip(outputs, graph.outputs)]
    return values[0] if len(values) == 1 else tuple(values)


class ScriptFunction:
    """A compiled free function: call it like the original; `.graph` and `.code` show what it runs."""

    # The size the examples of jit.trace had in the dim the graph names B (None: not traced, or no
    # such dim), and in its other dynamic dims (S1, S2, ...). Saved with the archive, where
    # runtime.load primes and sizes the call's memory for them.
    example_batch: int | None = None
    example_sizes: dict | None = None
    # The input dims jit.trace baked in (runtime.input_dims.BakedDim): a call at another size there is refused.
    baked_dims: tuple = ()

    def __init__(self, graph: Graph, functions: dict | None = None, signature: inspect.Signature | None = None,
                 specialization: list | None = None, broadcast_lengths: dict[str, int] | None = None):
        self.graph = graph
        self.broadcast_lengths = dict(broadcast_lengths or {})  # BroadcastingListN parameters: name -> N
        self.functions = dict(functions or {})
        self.signature = signature
        self.specialization = specialization  # from jit.script's example_inputs (runtime/specialize.py)
        self._interpreter = Interpreter(graph, self.functions)
        self._eager = EagerInterpreter(graph, self.functions)
        self._reads_autograd = reads_autograd([graph, *self.functions.values()])

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def code(self) -> str:
        return graph_code(self.graph, self.graph.name)

    def __call__(self, *args, **kwargs):
        args = convert_arguments(self.graph.inputs, bind_arguments(self.signature, args, kwargs, self.name, False),
                                 self.broadcast_lengths, self.name)
        check_input_dims(self.baked_dims, self.graph, 0, args, self.name)
        if _tracer[0] is not None:
            return _tracer[0].record_scripted_call(self.graph, self.functions, None, {}, args,
                                                   self._compute)
        return self._compute(args)

    def _compute(self, args: list):
        with scripted_call():
            if self._reads_autograd or wants_grad(args):
                return results(self._eager.run([eager_value(a) for a in args]), args, self.graph)
            return results(self._interpreter.run([to_runtime(a) for a in args]), args, self.graph)

    def __repr__(self) -> str:
        return f"<ScriptFunction {self.name}>"

    def save(self, path, **kwargs) -> None:
        from .api import save
        save(self, path, **kwargs)


def bind_arguments(signature: inspect.Signature | None, args, kwargs, name: str = "forward",
                   method: bool = True, inputs: list | None = None) -> list:
    """Positional values for a graph's inputs, with the Python signature's defaults filled in; a call
    that does not fit is torch's RuntimeError for it (a CallError) (`method`: torch counts self among the arguments).
    Without a signature (a traced module's forward), `inputs` are the graph's inputs the call must fill."""
    if signature is None:
        if kwargs:
            raise CallError(f"{name}() takes positional arguments only")
        if inputs is not None and len(args) > len(inputs):
            raise CallError(f"{name}() expected at most {len(inputs) + method} argument(s) but received "
                               f"{len(args) + method} argument(s)")
        if inputs is not None and len(args) < len(inputs):
            missing = inputs[len(args)].name or f"input{len(args)}"
            raise CallError(f"{name}() is missing value for argument '{missing}'")
        return list(args)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        raise CallError(_binding_error(signature, args, kwargs, name, method)) from None
    bound.apply_defaults()
    return list(bound.arguments.values())


def _binding_error(signature: inspect.Signature, args, kwargs, name: str, method: bool) -> str:
    parameters = list(signature.parameters)
    if len(args) + len(kwargs) > len(parameters):
        return (f"{name}() expected at most {len(parameters) + method} argument(s) but received "
                f"{len(args) + len(kwargs) + method} argument(s)")
    for keyword in kwargs:
        if keyword not in parameters:
            return f"Unknown keyword argument '{keyword}' for operator '{name}'"
        if parameters.index(keyword) < len(args):
            return f"Argument '{keyword}' specified both as positional and keyword argument"
    positional = sum(p.kind is not p.KEYWORD_ONLY for p in signature.parameters.values())
    if len(args) > positional:
        return (f"{name}() takes {positional + method} positional argument(s) but {len(args) + method} was/were "
                "given.")
    missing = next(p for p in parameters[len(args):] if p not in kwargs)
    return f"{name}() is missing value for argument '{missing}'"


def _positional_count(signature: inspect.Signature | None) -> int:
    """How many arguments a call passing all of them positionally gives (-1 when a signature with
    *args or keyword-only parameters binds even such a call to something else)."""
    if signature is None:
        return -1
    kinds = [p.kind for p in signature.parameters.values()]
    if any(kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for kind in kinds):
        return -1
    return len(kinds)


class _ScriptModuleType(type):
    """ScriptModule's metaclass: a jit.load'ed module (LoadedModule) is an instance of ScriptModule and
    of RecursiveScriptModule, as torch's loaded module is; a traced one is not a RecursiveScriptModule."""

    def __instancecheck__(cls, obj) -> bool:
        if cls is RecursiveScriptModule:
            return getattr(type(obj), "_loaded_from_archive", False) or (
                type.__instancecheck__(ScriptModule, obj) and not type.__instancecheck__(TracedModule, obj))
        if cls is ScriptModule and getattr(type(obj), "_loaded_from_archive", False):
            return True
        return type.__instancecheck__(cls, obj)


def made_by_jit(obj) -> bool:
    """Whether obj is a ScriptModule that jit.script or jit.trace made here (with its graphs and the
    original module), rather than a jit.load'ed module, which isinstance(obj, ScriptModule) also takes."""
    return type.__instancecheck__(ScriptModule, obj)


class ScriptModule(Module, metaclass=_ScriptModuleType):
    """A module compiled to graphs (`forward` and exported methods), with the original's parameters
    and buffers and, as torch's, a copy of its other state.

    `.graph` is forward's graph, `.code` its readable source; parameters, buffers and state_dict are
    the original module's tensors (updates to them show through); attributes and training flags are
    the scripted module's own (what its methods write, and eval()/train(), leave the original as it was).
    """

    # An nn.Module (isinstance, a child of other modules) over `_module`, the copy of the original's
    # tree that jit.script made (module_values.module_state_copy): the Module methods it does not
    # override reach its parameters, buffers and children through __getattr__; attributes set on it
    # stay its own, but for submodules (swapped).
    def __delattr__(self, name: str) -> None:
        """Only what was set on it deletes: the parameters, buffers and submodules its graphs read stay,
        as on torch's scripted module (torch's RuntimeError)."""
        module = self.__dict__.get("_module")
        if module is not None and (name in module._parameters or name in module._buffers or name in module._modules):
            raise RuntimeError("cannot delete methods or parameters of a script module")
        object.__delattr__(self, name)

    def __setattr__(self, name: str, value) -> None:
        module = self.__dict__.get("_module")
        if module is not None and name in module._modules and isinstance(value, Module):
            self._swap_submodule(name, value)
            return
        if module is not None and (name in module._parameters or name in module._buffers):
            setattr(module, name, value)  # (the graphs read parameters and buffers at each call)
            return
        if module is not None and not name.startswith("_") and name != "training" and name in vars(module) and \
                not isinstance(self, TracedModule):
            # one of the module's attributes, as torch's scripted module sets it: the graphs read it at
            # each call, or have it as a constant and are compiled again when it changes
            changed = not same_value(vars(module)[name], value)
            setattr(module, name, value)
            if changed and ("", name) not in self._attributes:
                self._recompile()
            return
        object.__setattr__(self, name, value)

    def _recompile(self) -> None:
        """The methods compiled again from the module as it is now."""
        from .api import script_module

        methods = {method: getattr(type(self._module), method) for method in self._graphs}
        fresh = script_module(self._module, methods=methods)
        for key in ("_graphs", "_functions", "_interpreters", "_eager", "_reads_autograd", "_attributes",
                    "_signatures", "_ignored", "_called_methods"):
            object.__setattr__(self, key, fresh.__dict__[key])
        object.__setattr__(self, "_objects", {})
        vars(self).pop("_unhooked_forward", None)

    def _with_own_slots(self) -> "ScriptModule":
        """These compiled methods over a module tree of their own whose attributes hold the values this
        one's hold (torch's jit.freeze works on such a clone: assigning an attribute of one is no
        change to the other; appending to a list they both hold is)."""
        twin = object.__new__(type(self))
        vars(twin).update(vars(self))
        object.__setattr__(twin, "_module", module_state_copy(self._module, copy_values=False))
        object.__setattr__(twin, "_objects", dict(self._objects))
        vars(twin).pop("_unhooked_forward", None)
        return twin

    def _swap_submodule(self, name: str, new) -> None:
        """`scripted.name = torch.jit.script(other)`: the submodule replaced (where torch allows it:
        module_types.check_swap) and the methods compiled again, so calls run the new one."""
        from .module_types import check_swap

        check_swap(self, name, new)
        self._module._modules[name] = new
        self._recompile()

    example_batch: int | None = None  # (as ScriptFunction's: set by jit.trace)
    example_sizes: dict | None = None
    baked_dims: dict = {}  # method name -> the input dims jit.trace / trace_module baked in

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__module__.startswith("scriptc."):
            # a user's `class M(torch.jit.ScriptModule)`: M(...) builds it eagerly and scripts it
            from .script_module_class import construct

            cls.__new__ = staticmethod(construct)

    def __init__(self, module, graphs: dict[str, Graph], functions: dict | None = None, ignored=(),
                 signatures: dict[str, inspect.Signature] | None = None, specializations: dict | None = None,
                 attributes: dict | None = None, module_type: ModuleClassType | None = None,
                 called_methods=(), broadcast_lengths: dict[str, dict[str, int]] | None = None):
        object.__setattr__(self, "_ignored", list(ignored))
        # the methods compiled: the graphs' and those they call (inlined), as torch compiles them lazily
        object.__setattr__(self, "_called_methods", tuple(dict.fromkeys([*graphs, *called_methods])))
        # (a type of its own unless jit.script found one to share: traced modules never share)
        object.__setattr__(self, "_module_type", module_type or ModuleClassType(type(module)))
        # method -> its BroadcastingListN parameters (name -> N), where a single number stands for N
        object.__setattr__(self, "_broadcast_lengths", dict(broadcast_lengths or {}))
        # (submodule path, name) -> type of the plain attributes (lists, dicts, assigned numbers) graphs read
        object.__setattr__(self, "_attributes", dict(attributes or {}))
        object.__setattr__(self, "_specializations", dict(specializations or {}))
        object.__setattr__(self, "_signatures", dict(signatures or {}))
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_graphs", dict(graphs))
        object.__setattr__(self, "_functions", dict(functions or {}))
        object.__setattr__(self, "_interpreters", {name: Interpreter(g, self._functions) for name, g in graphs.items()})
        object.__setattr__(self, "_eager", {name: EagerInterpreter(g, self._functions) for name, g in graphs.items()})
        object.__setattr__(self, "_reads_autograd", reads_autograd([*graphs.values(), *self._functions.values()]))
        object.__setattr__(self, "_state", None)
        object.__setattr__(self, "_objects", {})  # script-class attributes as runtime objects

    @property
    def graph(self) -> Graph:
        return self._graphs["forward"]

    @property
    def _c(self) -> ModuleHandle:
        """torch's handle on the compiled module: `_c._type()` is its type (module_types.py)."""
        return ModuleHandle(self)

    @property
    def graphs(self) -> dict[str, Graph]:
        return dict(self._graphs)

    @property
    def _scriptc_original(self):
        """The module tree this runs on (jit.script compiles a scripted child from its source)."""
        return self._module

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def _module_value(self, eager: bool = False) -> ModuleValue:
        """The module as the graphs see it: parameters, buffers (arrays, or the Tensors themselves when
        `eager`), training flags, plain attributes; attribute writes go back to the Python module."""
        return LiveModuleValue.of(self._module, "", self._attributes, eager, self._objects)

    def run_method(self, name: str, /, *args, **kwargs):
        with scripted_call():
            return self._run_method(name, *args, **kwargs)

    def _run_method(self, name: str, /, *args, **kwargs):
        if name not in self._interpreters:
            raise AttributeError(f"{type(self._module).__name__} has no compiled method '{name}'")
        args = convert_arguments(self._graphs[name].inputs[1:],
                                 bind_arguments(self._signatures.get(name), args, kwargs, name,
                                                inputs=self._graphs[name].inputs[1:]),
                                 self._broadcast_lengths.get(name), name, first_position=1)
        check_input_dims(self.baked_dims.get(name, ()), self._graphs[name], 1, args, name)
        tracer = _tracer[0]
        if tracer is not None and tracer.reaches(self._module):
            return tracer.record_scripted_call(self._graphs[name], self._functions, self._module, self._attributes,
                                               args, lambda given: self._compute(name, given))
        if tracer is not None:
            # traced from a module that does not hold this one: its ops are recorded with its state
            # as constants (the graph cannot reach it from self)
            return results(self._eager[name].run([self._module_value(eager=True)] + [eager_value(a) for a in args]),
                           args, self._graphs[name])
        return self._compute(name, args)

    def _compute(self, name: str, args: list):
        if self._reads_autograd or wants_grad(args) or wants_grad(list(self._module.parameters())):
            return results(self._eager[name].run([self._module_value(eager=True)] + [eager_value(a) for a in args]),
                           args, self._graphs[name])
        module_value = self._module_value()
        try:
            outputs = self._interpreters[name].run([module_value] + [to_runtime(a) for a in args])
        finally:
            module_value.write_back()
        return results(outputs, args, self._graphs[name])

    def __call__(self, *args, **kwargs):
        return self.run_method("forward", *args, **kwargs)

    def forward(self, *args, **kwargs):
        """forward itself: as torch's, without the module's forward pre-hooks and hooks, which calling
        the module runs around it."""
        module = self._module
        if isinstance(self, TracedModule) or not (module._forward_pre_hooks or module._forward_hooks):
            return self.run_method("forward", *args, **kwargs)
        unhooked = self.__dict__.get("_unhooked_forward")
        if unhooked is None:
            from .api import script_method

            unhooked = script_method(module, "forward", hooks=False)
            object.__setattr__(self, "_unhooked_forward", unhooked)
        return unhooked.run_method("forward", *args, **kwargs)

    def __getattr__(self, name: str):
        graphs = self.__dict__.get("_graphs", {})
        if name in graphs:
            return lambda *args, **kwargs: self.run_method(name, *args, **kwargs)
        if _unused_property(type(self._module), name):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        found = getattr(self._module, name)
        if isinstance(found, Attribute):  # torch.jit.Attribute(value, type): the scripted module holds the value
            return found.value
        if isinstance(found, dtype):  # it reads as its ScalarType number (7 for float64), as on torch's
            return SCALAR_TYPE_NUMBERS[found]
        # a list, dict or tuple reads as a copy (torch converts the attribute to a Python value): a
        # change to what was read is no change to the module until it is assigned back
        return attribute_copy(found) if type(found) in (list, dict, tuple) else found

    # --- state, delegated to the original module -------------------------------------------
    def parameters(self, recurse: bool = True):
        return self._module.parameters(recurse)

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        return self._module.named_parameters(prefix, recurse)

    def buffers(self, recurse: bool = True):
        return self._module.buffers(recurse)

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return self._module.named_buffers(prefix, recurse)

    def named_modules(self, *args, **kwargs):
        return self._module.named_modules(*args, **kwargs)

    def modules(self):
        return self._module.modules()

    def children(self):
        return self._module.children()

    def state_dict(self, *args, **kwargs):
        return self._module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True):
        return self._module.load_state_dict(state_dict, strict)

    def eval(self) -> "ScriptModule":
        self._module.eval()
        return self

    def train(self, mode: bool = True) -> "ScriptModule":
        self._module.train(mode)
        return self

    @property
    def training(self) -> bool:
        return self._module.training

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(dir(self._module)) | set(self._graphs))

    @property
    def original_name(self) -> str:
        """The name of the scripted module's class (torch's RecursiveScriptModule.original_name)."""
        return type(self._module).__name__

    def __repr__(self) -> str:
        return _script_module_repr(self._module, "RecursiveScriptModule")

    def save(self, path, **kwargs) -> None:
        from .api import save
        save(self, path, **kwargs)

    def save_to_buffer(self, **kwargs) -> bytes:
        """The archive jit.save writes, as bytes (torch's ScriptModule.save_to_buffer)."""
        from .api import save
        buffer = io.BytesIO()
        save(self, buffer, **kwargs)
        return buffer.getvalue()


def _unused_property(cls, name: str) -> bool:
    """A property the scripted module leaves out: listed in __jit_unused_properties__ or @jit.unused."""
    member = inspect.getattr_static(cls, name, None)
    return isinstance(member, property) and (name in getattr(cls, "__jit_unused_properties__", ()) or
                                             getattr(member.fget, "_scriptc_unused", False))


def _script_module_repr(module, kind: str | None, original_name=lambda module: type(module).__name__) -> str:
    """torch's print of a scripted module: each submodule by name, each showing its original_name (its
    class name, or what `original_name(module)` says); every module printed as `kind`
    (RecursiveScriptModule), or as its own class name where kind is None (traced)."""
    children = [f"({name}): {_script_module_repr(child, kind, original_name)}"
                for name, child in module.named_children()]
    name = original_name(module)
    kind = kind or name
    if not children:
        return f"{kind}(original_name={name})"
    body = "\n".join([f"original_name={name}", *children])
    return f"{kind}(\n{textwrap.indent(body, '  ')}\n)"


class RecursiveScriptModule(ScriptModule):
    """torch.jit.RecursiveScriptModule, for isinstance: what jit.script returns, and what jit.load
    returns (a LoadedModule), are instances of it; jit.trace's modules are not."""


class TracedModule(ScriptModule):
    """The ScriptModule jit.trace returns for an nn.Module; a submodule the trace called reads as a
    TracedModule of its own (traced_children.py)."""

    def __repr__(self) -> str:
        return _script_module_repr(self._module, None)

    def __getattr__(self, name: str):
        found = super().__getattr__(name)
        example = self.__dict__.get("_child_inputs", {}).get(name)
        if example is None or not isinstance(found, Module) or isinstance(found, ScriptModule):
            return found
        children = self.__dict__.setdefault("_traced_children", {})
        if name not in children:
            children[name] = trace_child(found, example)
        return children[name]
