"""A traced submodule called from scripted code: its traced graph is inlined, as torch's script
compiler does (torch.jit.script(Searcher(traced_encoder, traced_decoder)) in the chatbot deployment
tutorial): the trace is what that submodule computes, its Python source may not even script."""

from __future__ import annotations

from scriptc.ir.graph import clone_node, walk
from scriptc.types import ListType, ModuleType, NamedTupleType, TensorType, TupleType

from .values import SugaredModule


class TracedCalls:
    """Calls of a TracedModule (owner.traced) or a jit.load'ed module (owner.loaded) reached through
    `self`: their stored forward graph inlined."""

    def call_traced(self, owner: SugaredModule, args: list, kwargs: dict, node):
        for sub, name in owner.traced._attributes:
            path = f"{owner.path}.{sub}" if sub else owner.path
            self.ctx.module_attributes[(path, name)] = owner.traced._attributes[(sub, name)]
        return self.inline_stored_forward(owner, owner.traced._graphs["forward"], "traced", args, kwargs, node)

    def call_loaded(self, owner: SugaredModule, args: list, kwargs: dict, node):
        archive = owner.loaded._model.archive
        if "forward" not in archive.graphs:
            raise self.error(f"the jit.load'ed module {owner.path} has no forward", node)
        forward = self.with_loaded_functions(archive.graphs["forward"], archive.functions)
        return self.inline_stored_forward(owner, forward, "loaded", args, kwargs, node)

    def with_loaded_functions(self, forward, functions: dict):
        """A jit.load'ed forward with the functions it calls added to this script's; one whose name
        another function here has (two archives of one code base) is added under a name of its own,
        as torch mangles it, and the calls of it renamed."""
        names = {}
        for name, graph in functions.items():
            taken = self.ctx.functions.get(name)
            new = self.ctx.loaded_function_names.get(id(graph))
            if new is None:
                new = name
                while taken is not None and taken is not graph:
                    new += "_"
                    taken = self.ctx.functions.get(new)
                self.ctx.loaded_function_names[id(graph)] = new
                self.ctx.functions[new] = graph
            names[name] = new
        renamed = {old: new for old, new in names.items() if old != new}
        if not renamed:
            return forward
        for name, graph in functions.items():
            if self.ctx.functions[names[name]] is graph:
                self.ctx.functions[names[name]] = _calls_renamed(graph, renamed)
        return _calls_renamed(forward, renamed)

    def call_traced_function(self, traced, args: list, kwargs: dict, node):
        """A function jit.trace made, called from scripted code: its graph inlined (the functions it
        calls kept under their names)."""
        graph = traced.graph
        if kwargs or len(args) != len(graph.inputs):
            raise self.error(f"traced function {graph.name} takes {len(graph.inputs)} positional arguments (a "
                             f"traced function takes no keywords), got {len(args)} and {len(kwargs)} keyword", node)
        for name, function in traced.functions.items():
            if self.ctx.functions.setdefault(name, function) is not function:
                raise self.error(f"traced function {graph.name} calls a function '{name}' whose name another "
                                 "function of this script has", node)
        return self.inline_graph(graph, dict(zip(graph.inputs, [self.as_value(a, node) for a in args])), "")

    def inline_stored_forward(self, owner: SugaredModule, graph, kind: str, args: list, kwargs: dict, node):
        params = graph.inputs[1:]
        if kwargs or len(args) != len(params):
            raise self.error(f"{kind} module {owner.path}'s forward takes {len(params)} positional arguments (a "
                             f"{kind} forward takes no keywords), got {len(args)} and {len(kwargs)} keyword", node)
        mapping = {graph.inputs[0]: owner.value}
        for param, arg in zip(params, args):
            mapping[param] = self.as_value(arg, node)
        return self.inline_graph(graph, mapping, owner.path)

    def inline_graph(self, graph, mapping: dict, owner_path: str):
        """`graph`'s nodes cloned into the current block, its inputs read as `mapping` gives them; its
        result (a tuple of several)."""
        for stored_node in graph.block:
            cloned = clone_node(stored_node, mapping)
            self.block.append(cloned)
            for inner in [cloned, *(n for b in cloned.blocks for n in walk(b))]:
                for v in inner.outputs:
                    v.type = _generic(v.type, owner_path)
        outputs = [mapping.get(o, o) for o in graph.outputs]
        return outputs[0] if len(outputs) == 1 else self.emit1("prim::TupleConstruct", outputs,
                                                               TupleType(tuple(o.type for o in outputs)))


def _generic(t, owner_path: str):
    """A traced value's type in the caller's graph: tensors without the sizes the trace saw (the
    caller's inputs may have others), submodules by their path from the caller's top module."""
    if isinstance(t, TensorType):
        return TensorType(t.dtype, None, t.device)
    if isinstance(t, NamedTupleType):
        return NamedTupleType(tuple(_generic(e, owner_path) for e in t.elems), t.name, t.fields)
    if isinstance(t, TupleType):
        return TupleType(tuple(_generic(e, owner_path) for e in t.elems))
    if isinstance(t, ListType):
        return ListType(_generic(t.elem, owner_path))
    if isinstance(t, ModuleType):
        return ModuleType(f"{owner_path}.{t.path}" if t.path else owner_path)
    return t


def _calls_renamed(graph, renamed: dict):
    """A copy of `graph` whose calls (prim::Call, prim::Fork) of the functions `renamed` names use their
    new names."""
    copy = graph.copy()
    for node in walk(copy.block):
        if node.attrs.get("function") in renamed:
            node.attrs["function"] = renamed[node.attrs["function"]]
    return copy
