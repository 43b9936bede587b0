"""ScriptContext: what one jit.script call compiles besides its entry point - helper function graphs
(prim::Call targets), script classes and their methods, @jit.ignore'd Python functions, overloads,
the module attributes scripted code reads and writes - and the entry points that compile."""

from __future__ import annotations

import dataclasses
import gc
import inspect
import os
import typing
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from scriptc.errors import NotSupportedError, ScriptError
from scriptc.ir.graph import Graph
from scriptc.jit.arguments import SCRIPT_CLASSES
from scriptc.ir.nesting import deep_recursion
from scriptc.types import NoneType, ObjectType, TensorType, Type

from .. import ast
from ..parser import parse
from ..source import get_source
from .dataclass_methods import generated_method, is_generated, is_init_only
from .function import FunctionCompiler, build_graph
from .modules import container_type_of, unconvertible_attribute
from .resolve import jit_functions
from .types import AnnotationError, annotations_of, python_type

MAX_INLINE_DEPTH = 64


@dataclass
class ScriptClass:
    """A @jit.script class: its compiled name, attribute types (from __init__ or annotations)."""

    cls: Any
    name: str
    attributes: dict = field(default_factory=dict)
    defining: bool = False


@contextmanager
def compiling():
    """Compiling allocates many objects and frees few until it ends: collections in between find
    no garbage, so they are held off (and deep expressions get room to recurse)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        with deep_recursion():
            yield
    finally:
        if enabled:
            gc.enable()


def definition_of(fn, source=None):
    """(the function's AST definition, its Source)."""
    source = source or get_source(fn)
    for stmt in parse(source):
        if isinstance(stmt, ast.FunctionDef):
            return stmt, source
        if isinstance(stmt, ast.Unsupported):
            raise source.error(stmt.message, stmt.line, stmt.col, NotSupportedError)
    raise ScriptError(f"jit.script: no function definition found in the source of {fn!r}", source.filename)


# What the dataclasses module writes that scripted code never calls (torch compiles placeholders)
_DATACLASS_PYTHON_ONLY = ("__repr__", "__hash__", "__setattr__", "__delattr__", "__getstate__", "__setstate__")


_SCRIPTC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _in_scriptc(filename) -> bool:
    """Whether a source file is part of scriptc itself (no user code)."""
    return bool(filename) and os.path.abspath(filename).startswith(_SCRIPTC_DIR + os.sep)


class ScriptContext:
    """Per-script state shared by every function compiled for one jit.script call."""

    def __init__(self):
        self.functions: dict[str, Any] = {}
        self.broadcast_lengths: dict[Any, dict[str, int]] = {}  # function -> {BroadcastingListN parameter: N}
        self._names: dict[Any, str] = {}
        self._compiling: set = set()
        # names of functions being compiled: a function they call must not take one (a helper `kl_div`
        # calling F.kl_div, whose qualified names are the same)
        self._names_taken: set[str] = set()
        self.ignored: dict[str, Any] = {}
        self.classes: dict[str, ScriptClass] = {}
        self._class_records: dict[Any, ScriptClass] = {}
        self.enum_classes: dict[str, Any] = {}
        self.interfaces: dict[str, Any] = {}  # class interfaces by the name their InterfaceType carries
        self.example_types: dict = {}  # function -> types of its parameters from jit.script's example_inputs
        self.module_attributes: dict[tuple[str, str], Type] = {}
        self._assigned: dict[Any, set] = {}
        self.jit_functions = jit_functions()
        self.depth = 0
        self.inlined_methods: set[tuple[str, str]] = set()  # (module path, method name) compiled into a caller
        # id of a jit.load'ed module's function graph -> its name here (another name where its own was taken)
        self.loaded_function_names: dict[int, str] = {}
        self.namedtuple_types: dict[str, Any] = {}  # NamedTuple name -> its type, as this script knows it

    # --- functions ---------------------------------------------------------------------------------
    def compile_function_graph(self, fn, graph_name: str | None = None, module=None, hooks: bool = False) -> Graph:
        """A Graph for a free function (or a module method: `module` is `self`, the first input;
        `hooks`: forward with the module's forward hooks around it)."""
        with compiling():
            definition, source = definition_of(fn)
            return build_graph(self, fn, definition, source, graph_name or fn.__name__, owner=module, hooks=hooks)

    def function_graph(self, fn, caller, node) -> tuple[Graph, str]:
        """The compiled graph of a helper function and its name in `functions` (compiled once)."""
        fn = getattr(fn, "__original_fn", fn)  # a jit.script_if_tracing wrapper compiles what it wraps
        key = fn
        if key in self._names:
            return self.functions[self._names[key]], self._names[key]
        if key in self._compiling:
            raise caller.error(f"recursive call to {fn.__name__}() (TorchScript does not support recursion)", node)
        self._compiling.add(key)
        try:
            definition, source = definition_of(fn)
            name = self.unique_name(fn.__qualname__.replace("<locals>.", ""))
            self._names_taken.add(name)
            graph = build_graph(self, fn, definition, source, name)
        except ScriptError as exc:
            if _in_scriptc(getattr(fn, "__code__", None) and fn.__code__.co_filename) and _in_scriptc(exc.filename):
                # scriptc's own Python (nn.parallel.data_parallel...) is no code of the user's: the
                # refusal names the user's call, and the library line only as its reason
                raise caller.error(f"{fn.__module__}.{fn.__qualname__} cannot be compiled: {exc.message} "
                                   f"({exc.filename}:{exc.line})", node, type(exc)) from None
            exc.add_caller(caller.called_here(fn.__name__, node))
            raise
        finally:
            self._compiling.discard(key)
        self.functions[name] = graph
        self._names[key] = name
        return graph, name

    def unique_name(self, name: str) -> str:
        while name in self.functions or name in self._names_taken:
            name += "_"
        return name

    def probe_return_type(self, compiler: FunctionCompiler, definition, params: dict):
        """The return type of a function with early returns and no annotation: its body compiled once,
        into a throwaway graph, noting each return's type."""
        probe = Graph("probe")
        prober = FunctionCompiler(self, compiler.source, compiler.fn, probe.block, compiler.self_value)
        prober.probing = True
        prober.declared = dict(compiler.declared)
        prober.compile_body(definition, dict(params), None)
        result = prober.probed_type(definition)
        probe.block.clear()
        return result

    def inline(self, fn, owner, args: list, kwargs: dict, caller, node, bound_self: bool = False, signature=None):
        """A module method (or hook) compiled into the caller's block with `self` the module
        (`signature`: an @_overload_method declaration whose types to compile it with)."""
        if self.depth > MAX_INLINE_DEPTH:
            raise caller.error("methods call each other too deeply (TorchScript does not support recursion)", node)
        if getattr(owner, "interface", None) is not None:  # its own methods see all of the module
            owner = dataclasses.replace(owner, interface=None)
        definition, source = definition_of(fn)
        if signature is not None:
            declared, _ = definition_of(signature)
            definition = ast.FunctionDef(definition.line, definition.col, definition.name, declared.params,
                                         declared.returns, definition.body, [], declared.type_comment)
        compiler = FunctionCompiler(self, source, fn, caller.block, owner)
        params, returns = compiler.parameter_types(definition, skip_self=not bound_self)
        self.inlined_methods.add((getattr(owner, "path", ""), fn.__name__))
        names = [p.name for p in definition.params]
        if bound_self:
            args = [owner] + list(args)
            params = [(names[0], None)] + params[1:]
        defaults = {p.name: p.default for p in inspect.signature(fn).parameters.values()
                    if p.default is not inspect.Parameter.empty}
        bound = {}
        for i, (name, declared) in enumerate(params):
            if i < len(args):
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            elif name in defaults:
                value = caller.default_value(defaults[name], declared, node)
            else:
                raise caller.error(f"{type(owner.module).__name__}.{fn.__name__}() missing required argument "
                                   f"'{name}'", node)
            if declared is not None and not (bound_self and i == 0):
                value = caller.as_value(value, node)
                value = caller.coerce(value, declared, node, f"{type(owner.module).__name__}.{fn.__name__}(): "
                                      f"argument '{name}' expects {declared}, got {value.type}")
            bound[name] = value
        extra = set(kwargs) - {name for name, _ in params}
        if extra:
            raise caller.error(f"{fn.__name__}() got an unexpected keyword argument '{sorted(extra)[0]}'", node)
        if len(args) > len(params):
            raise caller.error(f"{fn.__name__}() takes {len(params)} arguments but {len(args)} were given", node)
        self.depth += 1
        try:
            return compiler.compile_body(definition, bound, returns)
        finally:
            self.depth -= 1

    def inline_template(self, fn, bound: dict, caller, node) -> None:
        """One of templates.py's functions compiled into the caller's block, parameters bound."""
        definition, source = definition_of(fn)
        compiler = FunctionCompiler(self, source, fn, caller.block)
        compiler.at(definition)
        compiler.compile_body(definition, bound, NoneType)

    def identity_function(self, t: Type) -> str:
        """The name of a function graph returning its one argument of type `t` (what an Await made by
        _awaitable_nowait runs)."""
        name = f"awaitable_nowait[{t}]"
        if name not in self.functions:
            graph = Graph(name)
            graph.add_output(graph.add_input(t, "value"))
            self.functions[name] = graph
        return name

    def module_method_graph(self, owner, fn, caller, node) -> tuple[Graph, str]:
        """A module method compiled as a graph of its own (`self` its first input), for jit.fork."""
        key = (id(owner.module), owner.path, fn)  # (its attributes are recorded under its path)
        if key in self._names:
            return self.functions[self._names[key]], self._names[key]
        definition, source = definition_of(fn)
        name = self.unique_name(f"{type(owner.module).__name__}.{fn.__name__}")
        graph = build_graph(self, fn, definition, source, name, owner=owner.module, owner_path=owner.path)
        self.functions[name] = graph
        self._names[key] = name
        return graph, name

    # --- @jit.ignore / @jit.unused -------------------------------------------------------------------
    def register_ignored(self, fn) -> str:
        name = f"ignored:{getattr(fn, '__qualname__', fn.__name__)}"
        self.ignored[name] = fn
        return name

    def ignored_return_type(self, fn, caller) -> Type:
        annotation = inspect.signature(fn).return_annotation
        if annotation is inspect.Signature.empty:
            return TensorType()
        if isinstance(annotation, str):  # from __future__ import annotations: resolved in fn's module
            try:
                annotation = typing.get_type_hints(fn).get("return", annotation)
            except Exception:  # noqa: BLE001 - a name typing cannot resolve: reported below
                pass
        try:
            return python_type(annotation, caller.class_type)
        except AnnotationError as exc:
            raise caller.error(f"{fn.__name__}: {exc}") from None

    # --- overloads -------------------------------------------------------------------------------------
    def overloads_of(self, fn) -> list:
        from scriptc.jit.markers import function_overloads

        return function_overloads(fn)

    def method_overloads(self, cls, name: str) -> list:
        from scriptc.jit.markers import method_overloads

        return method_overloads(cls, name)

    def method_types(self, method) -> tuple[list, Any]:
        """The declared types of a method's parameters after self (Tensor where undeclared) and its
        declared return type (None where undeclared), from annotations or a `# type:` comment."""
        definition, source = definition_of(method)
        compiler = FunctionCompiler(self, source, method, Graph().block)
        params, returns = compiler.parameter_types(definition, skip_self=True)
        return [t for _, t in params], returns

    def declared_parameter_types(self, declaration, caller) -> dict:
        definition, source = definition_of(declaration)
        compiler = FunctionCompiler(self, source, declaration, Graph().block)
        params, _ = compiler.parameter_types(definition, skip_self=False)
        return dict(params)

    def overload_graph(self, fn, declaration, caller, node) -> tuple[Graph, str]:
        """fn's body compiled with the parameter types of one @_overload declaration."""
        key = (fn, declaration)
        if key in self._names:
            return self.functions[self._names[key]], self._names[key]
        definition, source = definition_of(fn)
        declared, _ = definition_of(declaration)
        definition = ast.FunctionDef(definition.line, definition.col, definition.name, declared.params,
                                     declared.returns, definition.body, [], declared.type_comment)
        name = self.unique_name(fn.__qualname__.replace("<locals>.", ""))
        self._names_taken.add(name)
        graph = build_graph(self, fn, definition, source, name)
        self.functions[name] = graph
        self._names[key] = name
        return graph, name

    # --- script classes ------------------------------------------------------------------------------
    def compile_class(self, cls) -> None:
        """Compile every method of the script class `cls` now, as torch.jit.script(cls) does: what
        cannot compile (an attribute __init__ does not set, a wrong type, inheritance) is a ScriptError
        here rather than where the class is first used."""
        methods = _compiled_methods(cls)
        first = next((m for m in methods.values() if not is_generated(cls, m.__name__, m)), None)
        if first is None:
            return
        with compiling():
            self.script_class(cls, FunctionCompiler(self, get_source(first), first, Graph("class").block))

    def script_class(self, cls, caller, node: ast.Node | None = None) -> ScriptClass:
        """The class `cls`, its methods compiled the first time (torch compiles each when the class is
        first used: one that cannot compile is an error even where nothing calls it); `node`, where
        code constructs it, is named in the error."""
        record = self._class_records.get(cls)
        if record is not None:
            return record
        if cls.__module__ == "builtins":  # (super(), set(): no class TorchScript compiles, nor one to mark)
            raise caller.error(f"Python builtin {cls!r} is currently not supported in Torchscript")
        if any(base is not object for base in cls.__bases__):
            raise caller.error(f"class {cls.__name__}: TorchScript does not support inheritance of classes "
                               f"(it derives from {', '.join(b.__name__ for b in cls.__bases__)})")
        record = ScriptClass(cls, self.unique_class_name(cls.__qualname__.replace("<locals>.", "")))
        self._class_records[cls] = record
        self.classes[record.name] = record
        for name, annotation in annotations_of(cls).items():
            if is_init_only(cls, name, annotation):
                continue
            try:
                record.attributes[name] = python_type(annotation, caller.class_type)
            except AnnotationError as exc:
                raise caller.error(f"{cls.__name__}.{name}: {exc}") from None
        try:
            if inspect.isfunction(getattr(cls, "__init__", None)):
                record.defining = True
                try:
                    self.method_graph(record, "__init__", caller, None)
                finally:
                    record.defining = False
            for name in _compiled_methods(cls):
                self.method_graph(record, name, caller, None)
        except ScriptError as exc:
            if node is not None:
                exc.add_caller(caller.called_here(f"__torch__.{record.name}", node))
            raise
        # instances crossing into compiled code (arguments, module attributes, archives) become
        # runtime ScriptObjects of this name with these attribute types (jit/module.py, runtime/attributes.py)
        cls._scriptc_class_name = record.name
        cls._scriptc_field_types = record.attributes
        SCRIPT_CLASSES[record.name] = cls
        return record

    def unique_class_name(self, name: str) -> str:
        while name in self.classes:
            name += "_"
        return name

    def class_named(self, name: str) -> ScriptClass:
        return self.classes[name]

    def declare_attribute(self, record: ScriptClass, name: str, t: Type) -> Type:
        record.attributes[name] = TensorType() if isinstance(t, TensorType) else t
        return record.attributes[name]

    def method_graph(self, record: ScriptClass, name: str, caller, node) -> tuple[Graph, str]:
        function = f"{record.name}.{name}"
        if function in self.functions:
            return self.functions[function], function
        fn = getattr(record.cls, name)
        if is_generated(record.cls, name, fn):  # a dataclass's __init__, __eq__...: no source to read
            fn = generated_method(record.cls, name)
        if function in self._compiling:
            raise caller.error(f"recursive call to {record.cls.__name__}.{name}() (TorchScript does not support "
                               "recursion)", node)
        self._compiling.add(function)
        try:
            definition, source = definition_of(fn)
            graph = build_graph(self, fn, definition, source, function, self_type=ObjectType(record.name))
        finally:
            self._compiling.discard(function)
        self.functions[function] = graph
        return graph, function

    # --- module attributes ------------------------------------------------------------------------------
    def assigned_attributes(self, cls) -> set:
        """Names scripted code may assign on modules of class `cls` (`self.x = ...` outside __init__)."""
        names = self._assigned.get(cls)
        if names is not None:
            return names
        names = set()
        for attr, member in vars(cls).items():
            # a property's setter and getter are methods too (self.attr = v runs the setter)
            functions = [member.fget, member.fset] if isinstance(member, property) else [member]
            for function in functions:
                if not inspect.isfunction(function) or attr == "__init__":
                    continue
                try:
                    definition, _ = definition_of(function)
                except ScriptError:
                    continue
                names |= _self_assignments(definition)
        self._assigned[cls] = names
        return names

    def attribute_type(self, owner, name: str, value, caller, node, writing: bool = False) -> Type:
        """The type of a module's plain attribute: its class annotation, else its current value's (None
        is NoneType). One whose value has no type (an empty list or dict) is torch's error: for reading
        'has no attribute', for `writing` 'Tried to set nonexistent attribute'."""
        from scriptc.jit.markers import Attribute

        key = (owner.path, name)
        if key in self.module_attributes:
            return self.module_attributes[key]
        annotation = annotations_of(type(owner.module)).get(name)
        if isinstance(value, Attribute):  # torch.jit.Attribute(value, type): the value, declared that type
            annotation = value.type
            setattr(owner.module, name, value.value)
        if annotation is not None:
            try:
                t = python_type(annotation, caller.class_type)
            except AnnotationError as exc:
                raise caller.error(f"{type(owner.module).__name__}.{name}: {exc}", node) from None
        else:
            t = container_type_of(value, None)
            if t is None and writing:
                raise caller.error(f"Tried to set nonexistent attribute: {name}. Did you forget to initialize it "
                                   "in __init__()?", node)
            if t is None:
                raise caller.error(unconvertible_attribute(owner.module, name, value), node)
        self.module_attributes[key] = t
        return t


def _self_assignments(definition: ast.FunctionDef) -> set:
    owner = definition.params[0].name if definition.params else "self"
    names = set()
    stack = list(definition.body)
    while stack:
        stmt = stack.pop()
        targets = list(stmt.targets) if isinstance(stmt, ast.Assign) else (
            [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else [])
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):  # self.scales, self.map_levels = ... (torchvision)
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                    target.value.id == owner:
                names.add(target.attr)
        for name in ("body", "orelse"):
            stack.extend(getattr(stmt, name, None) or [])
    return names


def _compiled_methods(cls) -> dict:
    """The methods of script class `cls` that torch compiles: its own functions, less those marked
    @torch.jit.ignore/unused and those of a dataclass that stay Python."""
    return {name: member for name, member in vars(cls).items() if inspect.isfunction(member)
            and not getattr(member, "_scriptc_ignore", False) and not getattr(member, "_scriptc_unused", False)
            and not (dataclasses.is_dataclass(cls) and name in _DATACLASS_PYTHON_ONLY)}
