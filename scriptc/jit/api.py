"""The jit entry points: script (and later save, load, freeze, optimize_for_inference)."""

from __future__ import annotations

import inspect

from scriptc.errors import ScriptError

from .module import ScriptFunction, ScriptModule
from .script import ScriptContext, compile_function_graph


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None):
    """Compile a function or an nn.Module instance from its source, keeping control flow
    (torch.jit.script). Usable as a decorator on functions. Raises ScriptError with file:line:col
    and a caret for anything outside the supported subset."""
    from scriptc.nn import Module

    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return script_module(obj)
    if isinstance(obj, type) and issubclass(obj, Module):
        raise ScriptError(f"jit.script expects a module instance, got the class {obj.__name__}; "
                          f"call jit.script({obj.__name__}(...))")
    if inspect.isfunction(obj):
        ctx = ScriptContext()
        graph = compile_function_graph(obj, ctx)
        return ScriptFunction(graph, {**ctx.functions, **_ignored_callables(ctx)}, inspect.signature(obj))
    raise ScriptError(f"jit.script cannot compile a {type(obj).__name__}")


def script_module(module) -> ScriptModule:
    ctx = ScriptContext()
    cls = type(module)
    methods = {"forward": cls.forward}
    for name in dir(cls):
        fn = getattr(cls, name, None)
        if inspect.isfunction(fn) and getattr(fn, "_scriptc_export", False) and name != "forward":
            methods[name] = fn
    graphs, signatures = {}, {}
    for name, fn in methods.items():
        graphs[name] = compile_function_graph(fn, ctx, graph_name=name, module=module)
        signature = inspect.signature(fn)
        signatures[name] = signature.replace(parameters=list(signature.parameters.values())[1:])
    return ScriptModule(module, graphs, {**ctx.functions, **_ignored_callables(ctx)}, ignored=sorted(ctx.ignored),
                        signatures=signatures)


def _ignored_callables(ctx: ScriptContext) -> dict:
    """@jit.ignore'd functions, wrapped to take and return numpy arrays like the interpreter does."""
    from .module import from_runtime, to_runtime

    def wrap(fn):
        def call(*args):
            return [to_runtime(fn(*[from_runtime(a) for a in args]))]
        return call
    return {name: wrap(fn) for name, fn in ctx.ignored.items()}


def _compiled(obj):
    """A ScriptModule or ScriptFunction for obj (scripting nn.Modules and functions first)."""
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    return script(obj)


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Inline everything and turn parameters, buffers and attributes into constants
    (torch.jit.freeze); the module should be in eval mode. Returns an OptimizedModule whose
    `.graph` is the frozen, simplified graph."""
    return _optimize(mod, level=1)


def optimize_for_inference(mod, other_methods=None, jit: bool | None = None, threads: int | None = None):
    """freeze, then fuse pointwise chains, reductions and matmul/conv epilogues into FusionGroups
    (visible in `.graph`). The result runs compiled by default (jit=False or SCRIPTC_JIT=0: the
    reference interpreter); kernels are compiled here, not on the first call."""
    return _optimize(mod, level=2, jit=jit, threads=threads)


def _optimize(mod, level: int, jit: bool | None = False, threads: int | None = None):
    from scriptc.passes import PassContext, optimize

    from .module import OptimizedModule

    compiled = _compiled(mod)
    if isinstance(compiled, ScriptModule):
        if compiled.training:
            compiled.eval()
        context = PassContext(functions={k: v for k, v in compiled._functions.items()},
                              module_value=compiled._module_value())
        records: list = []
        graph = optimize(compiled.graph, level, context, records)
        return OptimizedModule(graph, compiled._functions, compiled._signatures.get("forward"), compiled, records,
                               jit, threads)
    context = PassContext(functions=dict(compiled.functions))
    records = []
    graph = optimize(compiled.graph, level, context, records)
    return OptimizedModule(graph, compiled.functions, compiled.signature, None, records, jit, threads)
