"""The jit entry points: script (and later save, load, freeze, optimize_for_inference)."""

from __future__ import annotations

import functools
import inspect
import math
import os
import sys
import weakref

from scriptc.errors import NotSupportedError, ScriptError, ScriptTypeError
from scriptc.runtime.specialize import InputSpec
from scriptc.types import TensorType

from .frontend.compile import ScriptContext
from .frontend.compile.dataclass_methods import refuse_default_factories
from .frontend.compile.resolve import prepared_function
from .frontend.instance_annotations import warn_on_lost_annotations
from .module import ScriptFunction, ScriptModule, TracedModule, made_by_jit
from .module_values import module_state_copy
from .saved_tree import module_tree, stored_submodule_methods, submodule_methods


# the classes jit.script has compiled, in the order it compiled them (a WeakSet's order would vary
# from run to run, and with it the graph): the candidates a call through a class interface picks from
SCRIPTED_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Compile a function or an nn.Module instance from its source, keeping control flow
    (torch.jit.script). Usable as a decorator on functions. Raises ScriptError with file:line:col
    and a caret for anything outside the supported subset.

    `example_inputs`, as torch.jit.script takes it - a list of argument tuples (for a module, its
    forward's), or a dict from methods to such lists: the first tuple's tensors give each tensor
    argument a dtype and a shape (all but the first dim). optimize_for_inference and jit.load then
    also build a plan specialized for such inputs, with its pointwise chains fused and compiled;
    calls with other inputs run the generic plan, so results never depend on the examples."""
    from scriptc.nn import Module

    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    obj = getattr(obj, "__original_fn", obj)  # a script_if_tracing wrapper scripts what it wraps
    if isinstance(obj, (list, dict)):
        from .script_containers import script_container

        return script_container(obj)
    if isinstance(obj, Module):
        warn_on_lost_annotations(obj)
        # (as torch's, the scripted module's state is a copy: the Python module keeps its own)
        return script_module(module_state_copy(_prepare_scriptable(obj, {})), example_inputs)
    prepare = getattr(type(obj), "__prepare_scriptable__", None)
    if prepare is not None and not isinstance(obj, type):  # any object may name what to script in its place
        prepared = prepare(obj)
        if prepared is not obj:  # (one that names itself is scripted as it is)
            return script(prepared, optimize, _frames_up + 1, _rcb, example_inputs)
    if isinstance(obj, type) and issubclass(obj, Module):
        raise ScriptError(f"jit.script expects a module instance, got the class {obj.__name__}; "
                          f"call jit.script({obj.__name__}(...))")
    if inspect.isfunction(obj):
        obj = prepared_function(obj)
        ctx = ScriptContext()
        _note_example_types(ctx, obj, example_inputs, "forward")
        graph = ctx.compile_function_graph(obj)
        specs = _example_specs(graph, 0, _examples_for(example_inputs, obj, "forward"), obj.__name__)
        scripted = ScriptFunction(graph, {**ctx.functions, **_ignored_callables(ctx)}, inspect.signature(obj), specs,
                                  ctx.broadcast_lengths.get(obj))
        scripted._scriptc_source = obj
        return scripted
    if isinstance(obj, type):
        refuse_default_factories(obj)
        # as torch, its methods also see the names of the scope that scripted it (a class defined
        # beside it in a function, named by an annotation); it names itself (`other: "Point"`) before
        # the decorator's result is bound to its name
        frame = sys._getframe(1 + _frames_up)
        local = frame.f_locals if frame.f_locals is not frame.f_globals else {}
        scope = {**local, obj.__name__: obj}
        for member in vars(obj).values():
            if inspect.isfunction(member):
                member._scriptc_defining_scope = scope
        ScriptContext().compile_class(obj)  # (errors now, as torch's; each use compiles it again)
        obj._scriptc_script_class = True
        SCRIPTED_CLASSES[obj] = None
        return obj
    call = inspect.getattr_static(type(obj), "__call__", None)
    if inspect.isfunction(call) and any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                        for p in inspect.signature(call).parameters.values()):
        raise NotSupportedError("Compiled functions can't take variable number of arguments or use keyword-only "
                                f"arguments with defaults ({type(obj).__name__}.__call__)")
    raise ScriptTypeError(f"jit.script cannot compile a {type(obj).__name__}: it compiles a function, an nn.Module or "
                          "a class")


def _prepare_scriptable(module, memo: dict):
    """The module with every module in it (itself included) that defines __prepare_scriptable__
    replaced by what that returns (what to script in its place), as torch.jit.script does."""
    if id(module) in memo:
        return memo[id(module)]
    if not isinstance(module, ScriptModule) and "_modules" not in module.__dict__:
        raise ScriptError(f"'{type(module).__qualname__}' has not been initialized, did you forget to call "
                          "'super()'?")
    prepare = getattr(type(module), "__prepare_scriptable__", None)
    prepared = prepare(module) if prepare is not None else module
    memo[id(module)] = prepared
    for name, child in list(getattr(prepared, "_modules", {}).items()):
        if child is not None:
            replaced = _prepare_scriptable(child, memo)
            if replaced is not child:
                prepared._modules[name] = replaced
    return prepared


def _examples_for(example_inputs, fn, name: str):
    """The first example tuple jit.script's `example_inputs` gives method `name`, or None."""
    tuples = _example_tuples(example_inputs, fn, name)
    return tuples[0] if tuples else None


def _example_tuples(example_inputs, fn, name: str) -> list:
    """Every example argument tuple jit.script's `example_inputs` gives method `name` ([] if none)."""
    if example_inputs is None:
        return []
    if isinstance(example_inputs, dict):
        matching = [v for k, v in example_inputs.items() if k is fn or getattr(k, "__name__", k) == name]
        if not matching:
            return []
        example_inputs = matching[0]
    if not isinstance(example_inputs, (list, tuple)) or not example_inputs:
        raise ScriptError(f"jit.script: example_inputs must be a non-empty list of argument tuples, "
                          f"got {type(example_inputs).__name__}")
    return [tuple(e) if isinstance(e, (list, tuple)) else (e,) for e in example_inputs]


def _note_example_types(ctx: ScriptContext, fn, example_inputs, name: str) -> None:
    """Types for fn's unannotated parameters from the example arguments (torch's profile-directed
    typing: what jit.script(fn, example_inputs=...) infers)."""
    from .frontend.compile.types import example_types

    tuples = _example_tuples(example_inputs, fn, name)
    if tuples:
        ctx.example_types[fn] = example_types(tuples)


def _example_specs(graph, skip: int, examples, name: str) -> list | None:
    """InputSpecs (runtime/specialize.py) for the graph's inputs after `skip`, from example values."""
    from scriptc.tensors import Tensor

    if examples is None:
        return None
    inputs = graph.inputs[skip:]
    if len(examples) > len(inputs):
        raise ScriptError(f"jit.script: example_inputs gives {len(examples)} values for {name}(), which takes "
                          f"{len(inputs)}")
    specs = []
    for value, example in zip(inputs, examples):
        is_tensor_input = isinstance(value.type, TensorType)
        if isinstance(example, Tensor) != is_tensor_input:
            raise ScriptError(f"jit.script: example for {name}()'s argument '{value.name}' is a "
                              f"{type(example).__name__}, but the argument is a {value.type}")
        if not is_tensor_input:
            specs.append(None)
            continue
        shape = tuple(example.shape)
        specs.append(InputSpec(example.dtype.name, (None,) + shape[1:] if shape else ()))
    return specs + [None] * (len(inputs) - len(specs))


def script_if_tracing(fn):
    """`fn`, compiled with jit.script the first time it is called while jit.trace records, so its
    control flow stays in the trace; outside tracing it runs as plain Python."""
    compiled = []

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .markers import is_tracing
        if not is_tracing():
            return fn(*args, **kwargs)
        if not compiled:
            compiled.append(script(fn))
        return compiled[0](*args, **kwargs)
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


def script_module(module, example_inputs=None, methods: dict | None = None, share_types: bool = True) -> ScriptModule:
    """`module` scripted: `methods` (name -> function; by default methods_to_compile's) compiled, its
    type shared with earlier modules like it unless `share_types` is False (module_types.py)."""
    from .module_types import check_constants, module_type

    for owner in module.modules():
        check_constants(owner)
    methods = methods_to_compile(module) if methods is None else methods
    return _compiled_methods(ScriptContext(), module, methods, example_inputs, module_type(module, share_types))


def methods_to_compile(module) -> dict:
    """The methods jit.script compiles for `module`: forward and the @jit.export'ed ones, by name."""
    from scriptc.nn import Module

    cls = type(module)
    # a module without its own forward (a plain container) has no forward to compile, as in torch
    methods = {} if cls.forward is Module.forward else {"forward": cls.forward}
    for name in dir(cls):
        fn = getattr(cls, name, None)
        if inspect.isfunction(fn) and getattr(fn, "_scriptc_export", False) and name != "forward":
            methods[name] = fn
    return methods


def script_method(module, name: str, hooks: bool = True) -> ScriptModule:
    """A ScriptModule of `module` with only its method `name` compiled (the layers' own code that a
    trace keeps as scripted code: called during jit.trace, its graph is inlined with control flow);
    without `hooks`, forward is compiled without the module's forward hooks around it."""
    return _compiled_methods(ScriptContext(), module, {name: getattr(type(module), name)}, None, hooks=hooks)


def _compiled_methods(ctx: ScriptContext, module, methods: dict, example_inputs, module_type=None,
                      hooks: bool = True) -> ScriptModule:
    graphs, signatures, specializations = {}, {}, {}
    for name, fn in methods.items():
        _note_example_types(ctx, fn, example_inputs, name)
    for name, fn in methods.items():
        # forward is what calling the module runs: its forward hooks are compiled around it
        graphs[name] = ctx.compile_function_graph(fn, graph_name=name, module=module, hooks=hooks and name == "forward")
        signature = inspect.signature(fn)
        signatures[name] = signature.replace(parameters=list(signature.parameters.values())[1:])
        specs = _example_specs(graphs[name], 1, _examples_for(example_inputs, fn, name), name)
        if specs is not None:
            specializations[name] = specs
    return ScriptModule(module, graphs, {**ctx.functions, **_ignored_callables(ctx)}, ignored=sorted(ctx.ignored),
                        signatures=signatures, specializations=specializations, attributes=ctx.module_attributes,
                        module_type=module_type, called_methods=[n for path, n in ctx.inlined_methods if not path],
                        broadcast_lengths={name: ctx.broadcast_lengths.get(fn, {}) for name, fn in methods.items()})


def _ignored_callables(ctx: ScriptContext) -> dict:
    """@jit.ignore'd functions, wrapped to take and return numpy arrays like the interpreter does."""
    from .module_values import from_runtime, to_runtime

    def wrap(fn):
        def call(*args):
            return [to_runtime(fn(*[from_runtime(a) for a in args]))]
        return call
    return {name: wrap(fn) for name, fn in ctx.ignored.items()}


def _compiled(obj):
    """A ScriptModule or ScriptFunction for obj (scripting nn.Modules and functions first; a frozen or
    optimized module gives its graph, as `optimize_for_inference(freeze(m))` is the usual call)."""
    from .compiled_modules import OptimizedModule

    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, OptimizedModule):
        if obj.needs_self:
            return obj.source
        return ScriptFunction(obj.generic_graph, obj.functions, obj.signature, obj.specs)
    return script(obj)


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Inline everything and turn parameters, buffers and attributes into constants
    (torch.jit.freeze) of a scripted or traced module in eval mode. Returns an OptimizedModule whose
    `.graph` is the frozen, simplified graph; `preserved_attrs` names methods and attributes kept
    on it, which run and read the module as it was scripted. A module without forward freezes to
    its scripted methods over attributes of its own."""
    from .compiled_modules import OptimizedModule

    from .loaded_module import LoadedModule

    if not isinstance(mod, (ScriptModule, ScriptFunction, OptimizedModule, LoadedModule)):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if isinstance(mod, (ScriptModule, LoadedModule)) and mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call "
                           ".eval() on your module before freezing.")
    for name in preserved_attrs or ():
        _preserved_attribute(mod, name)
    if made_by_jit(mod) and "forward" not in mod._graphs:
        # no forward to freeze: its exported methods run as they are, on attributes of its own (as torch's)
        return mod._with_own_slots()
    frozen = _optimize(mod, level=1, preserved=frozenset(preserved_attrs or ()))
    frozen.preserved = tuple(preserved_attrs or ())
    return frozen


def _preserved_attribute(mod, name: str) -> None:
    """A name jit.freeze is asked to keep (`attr`, `method`, `sub.attr`) is one the module has: torch's
    RuntimeError for one it has not (a misspelt name would otherwise be folded away silently)."""
    owner = mod
    for part in name.split("."):
        try:
            owner = getattr(owner, part)
        except AttributeError:
            raise RuntimeError(f"Unknown name: {name}") from None


def optimize_for_inference(mod, other_methods=None, jit: bool | None = None, threads: int | None = None):
    """freeze, then fuse pointwise chains, reductions and matmul/conv epilogues into FusionGroups
    (visible in `.graph`). The result runs compiled by default (jit=False or SCRIPTC_JIT=0: the
    reference interpreter); kernels are compiled here, not on the first call."""
    return _optimize(mod, level=2, jit=jit, threads=threads)


def _optimize(mod, level: int, jit: bool | None = False, threads: int | None = None,
              preserved: frozenset = frozenset()):
    from scriptc import config
    from scriptc.passes import PassContext
    from scriptc.runtime.plan import build_plan

    from .compiled_modules import OptimizedModule

    from .loaded_module import LoadedModule

    jit = config.jit_enabled() if jit is None else jit
    records: list = []
    if isinstance(mod, LoadedModule):
        return _optimize_loaded(mod, level, jit, threads, records, preserved)
    compiled = _compiled(mod)
    if isinstance(compiled, ScriptModule):
        if compiled.training:
            compiled.eval()
        compiled = compiled._with_own_slots()
        context = PassContext(functions=dict(compiled._functions), module_value=compiled._module_value(),
                              preserved=preserved)
        plan = build_plan(compiled.graph, context, specs=compiled._specializations.get("forward"), skip=1,
                          level=level, jit=jit, threads=threads, records=records)
        optimized = OptimizedModule(plan, compiled._functions, compiled._signatures.get("forward"), compiled, records)
        optimized.baked_dims = compiled.baked_dims.get("forward", ())
        return optimized
    context = PassContext(functions=dict(compiled.functions))
    plan = build_plan(compiled.graph, context, specs=compiled.specialization, level=level, jit=jit, threads=threads,
                      records=records)
    optimized = OptimizedModule(plan, compiled.functions, compiled.signature, None, records)
    optimized.baked_dims = compiled.baked_dims
    return optimized


def _optimize_loaded(loaded, level: int, jit: bool, threads: int | None, records: list,
                     preserved: frozenset = frozenset()):
    """freeze / optimize_for_inference of a jit.load'ed module: its stored forward with its state as it is
    now (eval mode, as for a scripted module)."""
    from scriptc.passes import PassContext
    from scriptc.runtime.input_dims import baked_dims_of
    from scriptc.runtime.model import input_specs
    from scriptc.runtime.plan import build_plan, takes_self

    from .compiled_modules import OptimizedModule

    if loaded._root is not None:
        raise RuntimeError(f"cannot freeze submodule '{loaded._path}' of a loaded module: the archive stores "
                           "the forward of the whole module")
    if loaded.training:
        loaded.eval()
    archive = loaded._archive
    graph = archive.graphs["forward"]
    skip = 1 if takes_self(graph) else 0
    signature = archive.signatures.get("forward", {})
    context = PassContext(functions=dict(archive.functions), module_value=loaded._module_value(), preserved=preserved)
    plan = build_plan(graph, context, specs=input_specs(signature, graph, skip, "forward"), skip=skip, level=level,
                      jit=jit, threads=threads, records=records)
    optimized = OptimizedModule(plan, archive.functions, None, loaded, records)
    optimized.baked_dims = baked_dims_of(signature, "forward", len(graph.inputs) - skip)
    return optimized


def signature_of(graph, skip_self: bool, specs: list | None = None, example_batch: int | None = None,
                  example_sizes: dict | None = None, baked_dims: tuple = (),
                  python: inspect.Signature | None = None) -> dict:
    """The archive's signature of a method: its inputs (with the defaults of `python`, the method's
    own signature, that an archive can hold), outputs and what a trace or example inputs fixed."""
    inputs = graph.inputs[1:] if skip_self else graph.inputs
    entries = [{"name": v.name or f"input{i}", "type": str(v.type)} for i, v in enumerate(inputs)]
    declared = list(python.parameters.values()) if python is not None else []
    if len(declared) == len(entries):
        for entry, parameter in zip(entries, declared):
            if parameter.default is not parameter.empty and _storable(parameter.default):
                entry["default"] = parameter.default
    signature = {"inputs": entries, "outputs": [str(v.type) for v in graph.outputs]}
    if specs is not None:
        signature["specialize"] = [s.to_json() if s is not None else None for s in specs]
    if example_batch is not None:
        signature["example_batch"] = example_batch
    if example_sizes:
        signature["example_sizes"] = dict(example_sizes)
    if baked_dims:
        signature["baked_dims"] = [entry.to_json() for entry in baked_dims]
    return signature


def save(m, f, _extra_files: dict | None = None, metadata: dict | None = None) -> None:
    """Save a scripted or traced module or function as one `.sc` archive (torch.jit.save) to `f`, a
    file name or a binary file object such as io.BytesIO.
    Weights go to weights.safetensors; `_extra_files` maps names to bytes/str stored beside them."""
    from scriptc.errors import ArchiveError
    from scriptc.runtime.archive import write_archive
    from scriptc.runtime.plan import takes_self

    from .compiled_modules import OptimizedModule
    from .loaded_module import LoadedModule

    optimized = None
    if isinstance(m, OptimizedModule):
        # Its plan is what is saved: forward's optimized graph (frozen weights and all), with the
        # specs of its examples; loading optimizes it again, which changes nothing but its guards.
        optimized = m
        if m.source is not None:
            m = m.source
        else:
            m = ScriptFunction(m.generic_graph, m.functions, m.signature, m.specs)
            m.baked_dims = optimized.baked_dims
    if isinstance(m, LoadedModule):
        _save_loaded(m, f, _extra_files, metadata, optimized)
        return
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise ArchiveError(f"jit.save expects a scripted or traced module or function, got {type(m).__name__}")
    if isinstance(f, (str, os.PathLike)) and not os.path.isdir(os.path.dirname(os.path.abspath(f))):
        raise RuntimeError(f"Parent directory {os.path.dirname(os.fspath(f))} does not exist.")
    extra = {k: (v.encode() if isinstance(v, str) else bytes(v)) for k, v in (_extra_files or {}).items()}
    if isinstance(m, ScriptModule):
        if m._ignored:
            raise ArchiveError(f"cannot save: the module calls Python function(s) {m._ignored} (@jit.ignore'd ones, "
                               "or methods of modules passed for a module interface), which an archive cannot hold")
        module = m._module
        # (a module shared by two owners - one embedding for encoder and decoder - is read by its graphs
        # under both paths)
        weights = {name: t._data for name, t in module.named_parameters(remove_duplicate=False)}
        weights.update({name: t._data for name, t in module.named_buffers(remove_duplicate=False)})
        attributes = {(f"{p}.training" if p else "training"): mod.training
                      for p, mod in module.named_modules(remove_duplicate=False)}
        attributes.update(_plain_attributes(m, weights))
        graphs = dict(m._graphs)
        if optimized is not None:
            graphs["forward"] = optimized.generic_graph
        functions = {k: v for k, v in m._functions.items() if not k.startswith("ignored:")}
        signatures = {name: signature_of(g, takes_self(g), m._specializations.get(name),
                                          *((m.example_batch, m.example_sizes) if name == "forward" else (None, None)),
                                          m.baked_dims.get(name, ()), m._signatures.get(name))
                      for name, g in graphs.items()}
        # (a traced module's submodules hold no traced graphs of their own: called through it)
        own = ({}, {}, {}) if isinstance(m, TracedModule) else submodule_methods(module)
        write_archive(f, "module", graphs, functions, weights, attributes, signatures, metadata, extra,
                      module_tree(module), *own)
        return
    if any(not hasattr(fn, "block") for fn in m.functions.values()):
        raise ArchiveError("cannot save: the function calls Python functions (@jit.ignore'd ones, or methods of "
                           "modules passed for a module interface)")
    write_archive(f, "function", {"forward": m.graph}, dict(m.functions), {}, {},
                  {"forward": signature_of(m.graph, False, m.specialization, m.example_batch, m.example_sizes,
                                            m.baked_dims, m.signature)},
                  metadata, extra)


def _storable(value) -> bool:
    """Whether a default is a value the manifest's JSON holds as it is: None, a bool, an int, a finite
    float, a string, or a list or tuple of them."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (list, tuple)) and all(_storable(v) for v in value)


def _save_loaded(loaded, f, extra_files: dict | None, metadata: dict | None, optimized=None) -> None:
    """Save a jit.load'ed module again: its stored graphs (forward's optimized one when `optimized`),
    with its parameters, buffers, modes and plain attributes as they are now."""
    from scriptc.errors import ArchiveError
    from scriptc.runtime import attributes
    from scriptc.runtime.archive import write_archive

    if loaded._root is not None:
        raise ArchiveError(f"cannot save submodule '{loaded._path}' of a loaded module on its own: the archive "
                           "stores the methods of the whole module")
    archive = loaded._archive
    weights, typed = loaded._stored_state()
    try:
        encoded = {k: attributes.encode(v, t, weights, k) for k, (v, t) in typed.items()}
    except ValueError as exc:
        raise ArchiveError(f"cannot save the loaded module's attributes: {exc}") from None
    graphs = dict(archive.graphs)
    if optimized is not None:
        graphs["forward"] = optimized.generic_graph
    extra = {k: (v.encode() if isinstance(v, str) else bytes(v)) for k, v in (extra_files or {}).items()}
    write_archive(f, archive.kind, graphs, archive.functions, weights, encoded, archive.signatures,
                  archive.metadata if metadata is None else metadata, extra,
                  loaded._module_entries() if archive.kind == "module" else None,
                  *stored_submodule_methods(archive))


def _plain_attributes(m: ScriptModule, weights: dict) -> dict:
    """The plain attributes the module's graphs read at run time, encoded for the manifest (the
    arrays of tensors among them added to `weights`)."""
    from scriptc.errors import ArchiveError
    from scriptc.runtime import attributes

    from scriptc.types import ModuleType

    out = {}
    for (path, name), t in m._attributes.items():
        owner = m._module.get_submodule(path) if path else m._module
        try:
            key = f"{path}.{name}" if path else name
            value = getattr(owner, name)
            if isinstance(t, ModuleType):  # a jit.load'ed module: its stored state, under its name
                stored_weights, stored_attributes = value._stored_state()
                weights.update({f"{key}.{k}": w for k, w in stored_weights.items()})
                out.update({f"{key}.{k}": attributes.encode(v, vt, weights, f"{key}.{k}")
                            for k, (v, vt) in stored_attributes.items()})
                continue
            live = m._objects.get((path, name))  # a script object's state as the graphs left it
            if live is not None and live.source is value:
                value = live.in_form(eager=False)
            out[key] = attributes.encode(value, t, weights, key)
        except ValueError as exc:
            raise ArchiveError(f"cannot save attribute {path + '.' if path else ''}{name}: {exc}") from None
    out.update(_constants(m._module, out))
    return out


def _constants(module, stored: dict) -> dict:
    """The modules' `__constants__` and their plain number, string and bool attributes (and tuples and
    lists of them) that the graphs do not read, encoded so that the loaded module still has them as
    attributes (`loaded.w`, `loaded.fc.in_features`), as torch's does."""
    from scriptc.runtime import attributes
    from scriptc.types import type_of_constant

    out = {}
    for path, owner in module.named_modules():
        plain = [name for name, value in vars(owner).items() if not name.startswith("_") and name != "training"
                 and _plain_value(value)]
        for name in [*getattr(type(owner), "__constants__", ()), *plain]:
            key = f"{path}.{name}" if path else name
            if key in stored or not hasattr(owner, name):
                continue
            value = getattr(owner, name)
            try:
                out[key] = attributes.encode(value, type_of_constant(value), None, key)
            except (TypeError, ValueError):  # (a constant no manifest type describes: the graphs still hold it)
                continue
    return out


def _plain_value(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and bool(value) and all(
        isinstance(v, (bool, int, float, str)) for v in value) and len({type(v) for v in value}) == 1


def load(f, map_location=None, _extra_files: dict | None = None):
    """Load an archive saved by jit.save as a LoadedModule, torch's loaded RecursiveScriptModule: called
    on tensors (compiled), with the saved submodules, parameters and buffers, trainable, `.graph`,
    `.code`; `_extra_files` (a dict) is filled with the stored extra files."""
    from scriptc.runtime.archive import read_archive
    from scriptc.runtime.model import build

    from .loaded_module import LoadedModule

    if isinstance(f, (str, os.PathLike)):
        # torch's checks, before any reading
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    options = {"device": str(map_location) if map_location is not None else "cpu"}
    model = build(read_archive(f, writable=True), getattr(f, "name", f), **options)
    if _extra_files is not None:  # (the names asked for, as torch fills them: b"" for one not stored)
        for name in list(_extra_files):
            _extra_files[name] = model.archive.extra_files.get(name, b"")
    return LoadedModule.of(model, options)
