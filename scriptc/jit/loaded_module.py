"""What jit.load returns: LoadedModule, the saved module rebuilt as a tree of modules (torch's
RecursiveScriptModule from torch.jit.load) over the archive's compiled model."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
from typing import Any

from scriptc.autograd.function import Function
from scriptc.errors import CallError
from scriptc.grad_mode import is_grad_enabled
from scriptc.ir.graph import Graph
from scriptc.ir.printer import graph_code
from scriptc.nn.module import Module
from scriptc.nn.parameter import Parameter
from scriptc.ops.quantized import forget_packed
from scriptc.runtime.archive import Archive
from scriptc.runtime.module_tree import ModuleEntry
from scriptc.runtime.interpreter import ModuleValue
from scriptc.runtime.plan import takes_self
from scriptc.tensors import Tensor, _tracer, wrap
from scriptc.tensors.dispatch import wants_grad
from scriptc.types import OptionalType, TensorType

from .arguments import convert
from .eager import EagerInterpreter, reads_autograd
from .module import by_array, needs_call_scope, results, scripted_call
from .module_values import eager_value, from_runtime, to_runtime


class LoadedModule(Module):
    """A module jit.load rebuilt from an archive, as torch's loaded RecursiveScriptModule: its
    submodules (`m.fc`, children(), named_modules()), parameters (which require grad) and buffers as
    the archive records them, train()/eval(), state_dict()/load_state_dict(), to(), deepcopy, print.

    Calling it runs the archive's compiled model. With grad mode on and parameters that require grad,
    the result's gradient function runs the stored graph again on tensors when backward needs it
    (_RecomputedBackward); where that cannot give what the compiled call did (the module writes its
    state or draws at random: batch norm or dropout in training mode), or an input requires grad, the
    call runs the stored graph on tensors. After its parameters, buffers or modes change, the next
    compiled call builds the model again from them. A submodule is called by itself (`loaded.layer1(x)`,
    `loaded.fc.forward(x)`) through the methods the archive stores for it (format 3), run on tensors.
    `.graph` / `.code` show the stored forward."""

    _loaded_from_archive = True  # (an instance of torch.jit.ScriptModule and RecursiveScriptModule, as torch's)

    def __init__(self, original_name: str, path: str = "", root: "LoadedModule | None" = None):
        super().__init__()
        object.__setattr__(self, "_original_name", original_name)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_root", root)  # None on the root itself

    # --- building ------------------------------------------------------------------------------
    @classmethod
    def of(cls, model, options: dict | None = None) -> "LoadedModule":
        """The module tree of a runtime model's archive; `options`: how to build it again (device,
        threads, jit)."""
        archive = model.archive
        root = cls._tree(archive, archive.modules or _entries_from_names(archive),
                         lambda key: wrap(archive.weights[key]), True)
        root._attach(archive, model, dict(options or {}), None)
        return root

    @classmethod
    def _tree(cls, archive: Archive, entries: list[ModuleEntry], tensor, requires_grad) -> "LoadedModule":
        """The nodes of `entries`, each tensor made by `tensor(key)`; parameters require grad where
        `requires_grad(key)` is true (or True)."""
        nodes: dict[str, LoadedModule] = {}
        for entry in entries:
            node = cls(entry.original_name, entry.path, nodes.get(""))
            if entry.path:
                parent, _, name = entry.path.rpartition(".")
                nodes[parent]._modules[name] = node
            nodes[entry.path] = node
            for local in entry.parameters:
                key = _key(entry.path, local)
                wants = requires_grad if isinstance(requires_grad, bool) else requires_grad(key)
                node._parameters[local] = Parameter(tensor(key), requires_grad=wants)
            for local in entry.buffers:
                node._buffers[local] = tensor(_key(entry.path, local))
            training = archive.attributes.get(_key(entry.path, "training"))
            if isinstance(training, bool):
                object.__setattr__(node, "training", training)
        return nodes[""]

    def _attach(self, archive: Archive, model, options: dict, plain: dict | None) -> None:
        """Root state: the archive (graphs, signatures), its compiled model (None: built at the next
        compiled call, from `plain`, the plain attributes' values), how to build it."""
        set_ = object.__setattr__
        set_(self, "_archive", archive)
        set_(self, "_options", options)
        set_(self, "_scoped", needs_call_scope(*archive.graphs.values(), *archive.functions.values()))
        set_(self, "_reads_autograd", reads_autograd([*archive.graphs.values(), *archive.functions.values()]))
        set_(self, "_plain", plain)
        set_(self, "_eager", {})  # method -> its EagerInterpreter, made at the first call that needs it
        set_(self, "_reading_state", {name for name, graph in archive.graphs.items() if takes_self(graph)})
        # method -> how many inputs it takes where all are Tensors: a call of that many Tensors needs no binding
        set_(self, "_tensor_arity", {name: _tensor_arity(graph) for name, graph in archive.graphs.items()})
        self._use(model)

    def _use(self, model) -> None:
        """Run calls on `model` until the module's state changes from what it is now."""
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_built_from", self._state_marks() if model is not None else None)
        object.__setattr__(self, "_replayable", {})  # method -> whether a backward may run it again
        object.__setattr__(self, "_previous_marks", None)  # the state an autograd call found (_settled)

    def _state_marks(self) -> tuple:
        """What the compiled model was built from: each tensor (its store, name, array, version) and
        each module's mode."""
        tensors = [(store, name, t, t._data, t._vc[0]) for _, node in self._nodes()
                   for store in (node._parameters, node._buffers) for name, t in store.items()]
        return tensors, [(node, node.training) for _, node in self._nodes()]

    def _unchanged(self, marks: tuple | None = None) -> bool:
        """Whether the state is what `marks` (by default: what the compiled model was built from) saw."""
        # (checked on every compiled call: plain loops, no generators)
        tensors, modes = marks or self._built_from
        for store, name, t, data, version in tensors:
            if store.get(name) is not t or t._data is not data or t._vc[0] != version:
                return False
        for node, mode in modes:
            if node.training is not mode:
                return False
        return True

    def _compiled_model(self):
        """The compiled model for the module as it is now (built again after a change), or None when
        its tensors no longer have the stored dtypes and shapes (after `.double()`): such a module runs
        the stored graph on tensors."""
        model = self._model
        if model is not None and self._unchanged():
            return model
        from scriptc.runtime.model import build

        weights = dict(self._archive.weights)
        for key, tensor in self._tensors():
            stored = self._archive.weights.get(key)
            if stored is None or tensor is None or tensor._data.dtype != stored.dtype or \
                    tensor._data.shape != stored.shape:
                object.__setattr__(self, "_plain", self._attribute_values())
                self._use(None)
                return None
            weights[key] = tensor._data
        plain = self._attribute_values()
        plain.update({_key(path, "training"): node.training for path, node in self._nodes()})
        archive = dataclasses.replace(self._archive, weights=weights, attributes=plain)
        object.__setattr__(self, "_plain", None)
        self._use(build(archive, "the loaded module", prime=False, **self._options))
        return self._model

    # --- the tree ------------------------------------------------------------------------------
    def _nodes(self):
        """(path, node) of every module of the tree, this one's root first (shared ones under each path)."""
        root = self._root or self
        return root.named_modules(remove_duplicate=False)

    def _tensors(self):
        """(key, tensor) of every parameter and buffer of the tree, by its full name."""
        for path, node in self._nodes():
            for store in (node._parameters, node._buffers):
                for name, tensor in store.items():
                    yield _key(path, name), tensor

    def _attribute_values(self) -> dict:
        """The plain attributes (all but the modes) by full name, as the graphs see them now."""
        root = self._root or self
        keys = [k for k in root._archive.attributes if k.rpartition(".")[2] != "training"]
        if root._model is None:
            from scriptc.runtime import attributes

            plain = root._plain or {}
            return {k: plain[k] if k in plain else attributes.resolve(root._archive.attributes[k],
                                                                       root._archive.weights) for k in keys}
        return {k: _value_at(root._model.module_value, k) for k in keys}

    def _module_value(self, eager: bool = False) -> ModuleValue:
        """The module as its graphs see it: parameters and buffers (Tensors when `eager`, else arrays),
        modes and plain attributes; what a scripted module holding this one passes its forward."""
        flat: dict[str, Any] = {key: t if eager or t is None else t._data for key, t in self._tensors()}
        flat.update(self._attribute_values())
        flat.update({_key(path, "training"): node.training for path, node in self._nodes()})
        return ModuleValue.from_flat(flat)

    def _stored_state(self) -> tuple[dict, dict]:
        """(weights, {attribute: (value, type)}) as they are now, attribute tensors as arrays: what saving
        writes (also under its name, for a scripted module holding this one)."""
        from scriptc.ir.parser import parse_type
        from scriptc.types import type_of_constant

        types = self._archive.attribute_types
        weights = {key: t._data for key, t in self._tensors() if t is not None}
        values = self._attribute_values()
        values.update({_key(path, "training"): node.training for path, node in self._nodes()})
        typed = {k: (v, parse_type(types[k]) if k in types else type_of_constant(v)) for k, v in values.items()}
        return weights, typed

    def _attribute_types(self) -> dict:
        """{(submodule path, name): type} of the plain attributes the archive types (what a trace that
        inlines this module's graphs reads from it at run time)."""
        from scriptc.ir.parser import parse_type

        return {(path, name): parse_type(text) for key, text in self._archive.attribute_types.items()
                for path, _, name in [key.rpartition(".")] if name != "training"}

    def _module_entries(self) -> list[ModuleEntry]:
        return [ModuleEntry(path, node._original_name, tuple(n for n, p in node._parameters.items() if p is not None),
                            tuple(n for n, b in node._buffers.items() if b is not None))
                for path, node in self._nodes()]

    # --- calling -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        return self.run_method("forward", *args, **kwargs)

    def run_method(self, name: str, /, *args, **kwargs):
        """Run the stored method `name` (forward, or one exported with @jit.export)."""
        if self._root is not None:
            return self._root._run_submodule_method(self._path, name, args, kwargs)
        if name not in self._archive.graphs:
            raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")
        if kwargs or len(args) != self._tensor_arity[name] or not all(type(a) is Tensor for a in args):
            args = _arguments(self._archive.graphs[name], self._archive.signatures.get(name, {}), name, args, kwargs)
        tracer = _tracer[0]
        if tracer is not None and tracer.reaches(self):  # a submodule of the traced module: its graph inlined
            return tracer.record_scripted_call(self._archive.graphs[name], self._archive.functions, self,
                                               self._attribute_types(), list(args),
                                               lambda given: self._call(name, tuple(given)))
        if tracer is not None:  # traced from code that does not hold it: its ops, its state as constants
            return self._run_on_tensors(name, args)
        return self._call(name, args)

    def _call(self, name: str, args: tuple):
        with scripted_call() if self._scoped else contextlib.nullcontext():
            if self._reads_autograd or wants_grad(args):
                return self._run_on_tensors(name, args)
            # (a saved frozen plan reads no parameter: its results need no gradient function)
            trained = [p for p in self.parameters() if p.requires_grad] \
                if is_grad_enabled() and name in self._reading_state else []
            if not trained:
                return self._compiled_call(name, args)
            if not self._settled():
                return self._run_on_tensors(name, args)
            if self._compiled_model() is not None and self._may_replay(name):
                return _RecomputedBackward.apply(self, name, len(args), *args, *trained)
            return self._run_on_tensors(name, args)

    def _settled(self) -> bool:
        """Whether a call that autograd needs may run compiled: the compiled model is the state's, or
        the state is what the call before saw (training changes it between calls: each such call runs
        on tensors, where building the model again for it would cost more than it saves)."""
        if self._model is not None and self._unchanged((self._built_from[0], ())):  # (a mode changed at most)
            return True
        marks, previous = self._state_marks(), self._previous_marks
        object.__setattr__(self, "_previous_marks", marks)
        return previous is not None and self._unchanged(previous)

    def _run_submodule_method(self, path: str, name: str, args: tuple, kwargs: dict):
        """The method `name` the archive stores for the submodule at `path`, run on tensors with the
        module's state (what it writes - batch norm's statistics, plain attributes - kept)."""
        graphs, functions = self._archive.module_methods(path)
        graph = graphs.get(name)
        if graph is None:
            node = dict(self._nodes())[path]
            if not graphs:
                raise RuntimeError(f"the archive stores no methods of submodule '{path}' ({node._original_name}): "
                                   "the module was traced (a trace records the whole module's forward only), was "
                                   "saved by an older scriptc, or this submodule's methods do not script by "
                                   "themselves; call the loaded module itself")
            raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")
        args = _arguments(graph, self._archive.module_signatures(path).get(name, {}), name, args, kwargs)
        module_value = self._module_value(eager=True)
        interpreter = self._eager.get((path, name))
        if interpreter is None:
            interpreter = self._eager[(path, name)] = EagerInterpreter(graph, functions)
        try:
            outputs = interpreter.run([_value_at(module_value, path), *[eager_value(a) for a in args]])
        finally:
            self._keep_attributes(module_value)
        return results(outputs, args, graph)

    def _compiled_call(self, name: str, args: tuple):
        model = self._compiled_model()
        if model is None:
            return self._run_on_tensors(name, args)
        return from_runtime(model.run_method(name, *[to_runtime(a) for a in args]), by_array(args))

    def _may_replay(self, name: str) -> bool:
        """Whether a call of the method may run again, on tensors, when backward needs its gradients, and
        compute what the compiled call did: it returns tensors, draws nothing at random and writes no
        module state (batch norm in eval mode; not in training mode, where it updates its statistics)."""
        known = self._replayable.get(name)
        if known is None:
            known = self._replayable[name] = _replayable(self._model.graphs[name], self._archive.graphs[name])
        return known

    def _run_on_tensors(self, name: str, args: tuple):
        """The stored graph run on Tensors (the module's own parameters and buffers among them), so
        that backward reaches the inputs and the parameters, as through torch's loaded modules; the
        buffers the graph writes are the module's (batch norm's running statistics)."""
        graph = self._archive.graphs[name]
        inputs = [eager_value(a) for a in args]
        module_value = self._module_value(eager=True) if takes_self(graph) else None
        interpreter = self._eager.get(name)
        if interpreter is None:
            interpreter = self._eager[name] = EagerInterpreter(graph, self._archive.functions)
        try:
            outputs = interpreter.run(inputs if module_value is None else [module_value, *inputs])
        finally:
            if module_value is not None:
                self._keep_attributes(module_value)
        return results(outputs, args, graph)

    def _keep_attributes(self, module_value: ModuleValue) -> None:
        """The plain attributes a run on tensors assigned (`self.calls += 1`), kept for the calls after."""
        values = self._attribute_values()
        changed = {k: to_runtime(_value_at(module_value, k)) for k in values}
        changed = {k: v for k, v in changed.items() if v is not values[k]}
        if not changed:
            return
        if self._model is None:
            object.__setattr__(self, "_plain", {**values, **changed})
            return
        for key, value in changed.items():
            owner, _, name = key.rpartition(".")
            (_value_at(self._model.module_value, owner) if owner else self._model.module_value).set(name, value)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            pass
        d = self.__dict__
        root = d.get("_root") or self
        if "_archive" not in root.__dict__:
            raise AttributeError(name)
        stored = root._archive.graphs if root is self else root._archive.module_method_names(d["_path"])
        if name in stored:
            return lambda *args, **kwargs: self.run_method(name, *args, **kwargs)
        key = _key(d["_path"], name)
        if key in root._archive.attributes:
            return from_runtime(root._attribute_values()[key])
        raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        """A stored plain attribute set (`loaded.scale = 3.0`) is what the next call reads, as on torch's
        loaded module; anything else is set as on any module."""
        d = self.__dict__
        root = d.get("_root") or self
        archive = root.__dict__.get("_archive")
        key = _key(d.get("_path", ""), name)
        if archive is None or name == "training" or key not in archive.attributes:
            super().__setattr__(name, value)
            return
        values = root._attribute_values()
        values[key] = to_runtime(value)
        object.__setattr__(root, "_plain", values)
        root._use(None)  # (the compiled plan may have folded the old value: built again at the next call)

    def __delattr__(self, name: str) -> None:
        """Only what the user set on it deletes: the parameters, buffers and submodules the stored graphs
        read stay, as on torch's loaded module."""
        if name in self._parameters or name in self._buffers or name in self._modules:
            raise RuntimeError("cannot delete methods or parameters of a script module")
        try:
            super().__delattr__(name)
        except AttributeError:
            raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'") from None

    # --- what torch's loaded modules show ------------------------------------------------------
    @property
    def original_name(self) -> str:
        """The saved module's class name (torch's RecursiveScriptModule.original_name)."""
        return self._original_name

    @property
    def graph(self) -> Graph:
        """The stored forward graph (of this module: the whole module's, or a submodule's own)."""
        root = self._root or self
        stored = root._archive.graphs if root is self else root._archive.module_methods(self._path)[0]
        if "forward" not in stored:
            raise AttributeError(f"the archive stores no forward of submodule '{self._path}'")
        return stored["forward"]

    @property
    def optimized_graph(self) -> Graph:
        model = self._require_root("optimized_graph")._compiled_model()
        return model.graphs["forward"] if model is not None else self.graph

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def _require_root(self, what: str) -> "LoadedModule":
        if self._root is not None:
            raise AttributeError(f"the archive stores the {what} of the whole module, not of its submodule "
                                 f"'{self._path}'")
        return self

    def _get_name(self) -> str:
        return "RecursiveScriptModule"

    def __repr__(self) -> str:
        from .module import _script_module_repr

        return _script_module_repr(self, "RecursiveScriptModule", lambda node: node._original_name)

    def __deepcopy__(self, memo: dict) -> "LoadedModule":
        """A copy with its own parameters and buffers (and plain attributes); its compiled model is
        built at its first compiled call."""
        root = self._root or self
        if id(root) in memo:
            return memo[id(root)]
        tensors = dict(root._tensors())
        copied = type(self)._tree(root._archive, root._module_entries(),
                                  lambda key: wrap(tensors[key]._data.copy()),
                                  lambda key: tensors[key].requires_grad)
        for (_, node), (_, twin) in zip(root._nodes(), copied._nodes()):
            object.__setattr__(twin, "training", node.training)
        copied._attach(root._archive, None, root._options, copy.deepcopy(root._attribute_values(), memo))
        memo[id(root)] = copied
        return dict(copied._nodes())[self._path]

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        result = super().load_state_dict(state_dict, strict, assign)
        for _, tensor in self._tensors():  # (copied in place: a product packed from the old values is stale)
            if tensor is not None:
                forget_packed(tensor._data)
        return result

    def save(self, path, **kwargs) -> None:
        from .api import save
        save(self, path, **kwargs)


class _RecomputedBackward(Function):
    """A compiled call of a loaded module whose parameters require grad: forward runs the compiled
    model; backward runs the stored graph again on tensors with autograd and takes its gradients, so
    that a call that is never differentiated (inference without no_grad) costs what a compiled call
    costs, and one that is reaches the parameters as torch's loaded modules do."""

    @staticmethod
    def forward(ctx, loaded, name, count, *tensors):
        ctx.loaded, ctx.name, ctx.count = loaded, name, count
        ctx.save_for_backward(*(t if isinstance(t, Tensor) else None for t in tensors))
        ctx.values = tensors
        return loaded._compiled_call(name, tensors[:count])

    @staticmethod
    def backward(ctx, *grads):
        from scriptc.autograd import grad
        from scriptc.grad_mode import enable_grad

        saved = ctx.saved_tensors  # (raises as torch does where a parameter changed in place since)
        values = [s if s is not None else v for s, v in zip(saved, ctx.values)]
        args = [v.detach() if isinstance(v, Tensor) else v for v in values[:ctx.count]]
        parameters = values[ctx.count:]
        with enable_grad():
            outputs = ctx.loaded._run_on_tensors(ctx.name, tuple(args))
        outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
        found = grad([o for o, _ in pairs], parameters, [g for _, g in pairs], allow_unused=True) if pairs else \
            [None] * len(parameters)
        return (None, None, None, *([None] * ctx.count), *found)


def _replayable(optimized: Graph, stored: Graph) -> bool:
    """Whether a call whose compiled plan is `optimized` may be run again from `stored`: tensor results
    (or tuples of them), no random op that draws, no module state written (a parameter, buffer or
    folded constant, or a view of one, written in place)."""
    from scriptc.ir.graph import walk
    from scriptc.passes.analysis import has_side_effects, mutated_values, op_of
    from scriptc.types import TensorType, TupleType

    results = [t for v in stored.outputs for t in (v.type.elems if isinstance(v.type, TupleType) else [v.type])]
    if not all(isinstance(t, TensorType) for t in results):
        return False
    state: set[int] = set()  # ids of the values that are module state or views of it
    for node in walk(optimized.block):
        op = op_of(node)
        if node.op == "prim::SetAttr" or op is not None and op.kind == "random" and has_side_effects(node):
            return False
        if node.op in ("prim::GetAttr", "prim::Constant") or op is not None and op.view and \
                any(id(v) in state for v in node.inputs):
            state.update(id(v) for v in node.outputs if isinstance(v.type, TensorType))
        if op is not None and any(id(v) in state for v in mutated_values(node)):
            return False
    return True


_MISSING = object()  # (an input a call left out)


def _arguments(graph: Graph, signature: dict, name: str, args: tuple, kwargs: dict) -> tuple:
    """A call's values in the order of a stored method's inputs (a keyword by its input's name, as the
    signature or else the graph names it; an input left out is its stored default, an Optional one
    without a default None), each checked against its input's type as torch's loaded module checks it
    (a list or an array where a Tensor is declared is torch's RuntimeError); CallError for a call that
    does not fit the inputs."""
    inputs = graph.inputs[1 if takes_self(graph) else 0:]
    stored = signature.get("inputs", [])
    names = [entry["name"] for entry in stored] if len(stored) == len(inputs) else [v.name for v in inputs]
    if len(args) > len(inputs):
        raise CallError(f"{name}() takes {len(inputs)} inputs, got {len(args)}")
    values = list(args) + [_MISSING] * (len(inputs) - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise CallError(f"{name}() got an unexpected input '{key}' (inputs: {', '.join(names)})")
        if values[names.index(key)] is not _MISSING:
            raise CallError(f"{name}() got two values for input '{key}'")
        values[names.index(key)] = value
    defaults = {e["name"]: e["default"] for e in stored if "default" in e} if len(stored) == len(inputs) else {}
    values = [defaults.get(n, v) if v is _MISSING else v for n, v in zip(names, values)]
    missing = [n for n, v, i in zip(names, values, inputs) if v is _MISSING and not isinstance(i.type, OptionalType)]
    if missing:
        raise CallError(f"{name}() is missing input(s) {', '.join(repr(m) for m in missing)}")
    return tuple(None if v is _MISSING else v if type(v) is Tensor else convert(v, i.type, n)
                 for v, i, n in zip(values, inputs, names))


def _tensor_arity(graph: Graph) -> int:
    """How many inputs a stored method takes (self aside) where each is a Tensor; -1 where some is not."""
    inputs = graph.inputs[1 if takes_self(graph) else 0:]
    return len(inputs) if all(type(v.type) is TensorType for v in inputs) else -1


def _key(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _value_at(module_value: ModuleValue, key: str):
    *owners, name = key.split(".")
    for part in owners:
        module_value = module_value.get(part)
    return module_value.get(name)


def _entries_from_names(archive: Archive) -> list[ModuleEntry]:
    """The module tree of an archive that does not record one (format 1): the submodules the dotted
    names of its weights and attributes give, each named Module, every floating-point weight a
    parameter and the others (num_batches_tracked) buffers, as only those can require grad."""
    stored: dict[str, tuple[list[str], list[str]]] = {"": ([], [])}
    for key in (*archive.weights, *archive.attributes):
        *owners, name = key.split(".")
        for depth in range(1, len(owners) + 1):
            stored.setdefault(".".join(owners[:depth]), ([], []))
        if key in archive.weights:
            parameters, buffers = stored[".".join(owners)]
            (parameters if archive.weights[key].dtype.kind in "fc" else buffers).append(name)
    return [ModuleEntry(path, "Module", tuple(parameters), tuple(buffers))
            for path, (parameters, buffers) in stored.items()]



# torch's RecursiveScriptModule refuses the nn.Module methods it does not compile (torch/jit/_script.py):
# "requires_grad_ is not supported on ScriptModules", also hooks, get_submodule, to_empty, compile.
_COMPILED_MODULE_METHODS = frozenset({
    "forward", "register_buffer", "register_parameter", "register_module", "add_module", "apply", "cuda", "cpu",
    "to", "type", "float", "double", "half", "state_dict", "load_state_dict", "parameters", "named_parameters",
    "buffers", "named_buffers", "children", "named_children", "modules", "named_modules", "zero_grad",
    "share_memory", "extra_repr", "eval", "train", "get_extra_state", "set_extra_state"})


def _refused(name: str):
    def refuse(self, *args, **kwargs):
        raise RuntimeError(f"{name} is not supported on ScriptModules")
    refuse.__name__ = name
    return refuse


for _name, _ in inspect.getmembers(Module, inspect.isfunction):
    if not _name.startswith("_") and _name not in _COMPILED_MODULE_METHODS and _name not in vars(LoadedModule):
        setattr(LoadedModule, _name, _refused(_name))
