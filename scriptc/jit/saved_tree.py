"""What jit.save records of a scripted module's tree beside its graphs: each module's class name,
parameters and buffers, and each submodule's own methods, so that the loaded module's submodules can
be called by themselves (scriptc/runtime/module_tree.py reads them back)."""

from __future__ import annotations

from .module import ScriptModule


def stored_submodule_methods(archive) -> tuple[dict, dict, dict]:
    """By path, the methods (their functions, and their signatures) a loaded archive stores for its
    submodules."""
    stored = {path: archive.module_methods(path) for path in archive.module_texts}
    return ({path: own[0] for path, own in stored.items()}, {path: own[1] for path, own in stored.items()},
            {path: archive.module_signatures(path) for path in stored})


def module_tree(module) -> list:
    """The archive's record of the module tree: each submodule's class name and which of its stored
    tensors are parameters and which buffers, as torch's loaded module tells them apart."""
    from scriptc.runtime.module_tree import ModuleEntry

    from .loaded_module import LoadedModule

    return [ModuleEntry(path, mod.original_name if isinstance(mod, LoadedModule) else type(mod).__name__,
                        tuple(n for n, p in mod._parameters.items() if p is not None),
                        tuple(n for n, b in mod._buffers.items() if b is not None))
            for path, mod in module.named_modules(remove_duplicate=False)]


def submodule_methods(module) -> tuple[dict, dict, dict]:
    """By path, each submodule's own methods (forward and its exported ones) scripted with the submodule
    as `self`, the functions they call and the methods' signatures (their defaults kept), so that a
    loaded module's submodules can be called by themselves, as torch's can. A submodule whose methods
    do not script on their own (typed only by what its caller passes) or call Python functions is left
    out: it is called through its owner."""
    from scriptc.errors import ScriptError
    from scriptc.nn import Module

    from .api import methods_to_compile, script_module, signature_of
    from .module_types import module_type

    graphs, functions, signatures, compiled = {}, {}, {}, {}
    for path, sub in module.named_modules(remove_duplicate=False):
        if not path or not isinstance(sub, Module) or isinstance(sub, ScriptModule):
            continue
        methods = methods_to_compile(sub)
        if not methods:
            continue
        # Modules of one type whose plain attributes agree compile to the same graphs (the blocks of a
        # ResNet stage): compiled once.
        key = (module_type(sub), _plain_values(sub))
        if key not in compiled:
            try:
                scripted = script_module(sub, methods=methods)
            except ScriptError:
                scripted = None
            compiled[key] = None if scripted is None or scripted._ignored else (
                dict(scripted._graphs), {k: v for k, v in scripted._functions.items() if not k.startswith("ignored:")},
                {name: signature_of(graph, True, python=scripted._signatures.get(name))
                 for name, graph in scripted._graphs.items()})
        if compiled[key] is not None:
            graphs[path], functions[path], signatures[path] = compiled[key]
    return graphs, functions, signatures


def _plain_values(module) -> tuple:
    """The plain (non-module, non-tensor) attribute values of a module and its submodules, which
    scripted code may read as constants."""
    from scriptc.nn import Module
    from scriptc.tensors import Tensor

    return tuple((path, name, repr(value)) for path, owner in module.named_modules(remove_duplicate=False)
                 for name, value in sorted(vars(owner).items())
                 if not name.startswith("_") and not isinstance(value, (Module, Tensor)))
