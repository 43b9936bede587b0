"""The autograd engine: the graph of Nodes, backward and grad (grad modes: scriptc/grad_mode.py).

Every differentiable op call made while grad mode is on and some input
requires grad records a `Node`: the op (whose table entry holds the gradient
formula), its saved arguments and output, and the version of every tensor
the formula reads. `backward` orders the Nodes reachable from the root,
calls each formula once with the summed gradient of its outputs, and
accumulates into the `.grad` of leaves.
"""

from __future__ import annotations

import re
import threading
import warnings

import numpy as np

from scriptc.autograd.anomaly_mode import _anomaly, anomaly_checked, note_forward
from scriptc.autograd.array_flow import (  # noqa: F401  (_gradient: scriptc.autograd re-exports it)
    _ARRAY_FLOW,
    SavedContext,
    _checked_hook_result,
    _gradient,
    _gradient_dtype,
)
from scriptc.autograd.graph import _hooks as _saved_tensor_hooks
from scriptc.autograd.graph import pack_op_inputs, unpacked_context
from scriptc.autograd.node_api import AccumulateGrad, call_node, saved_attribute
from scriptc.grad_mode import set_grad_enabled
from scriptc.ops.rules import legacy_type_name
from scriptc.types import from_numpy_dtype
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.meta import MetaArray, meta_array


FREED = "freed"


class Edge:
    """Where one input's gradient goes: output `index` of the Node that made the input, or, for a
    leaf, the leaf itself (its `.grad`). Taken when the op is recorded, so an in-place op that later
    gives the input tensor a new grad_fn does not rewire the history recorded before it."""

    __slots__ = ("node", "index", "leaf", "shape", "dtype")

    def __init__(self, tensor):
        self.node, self.index = tensor.grad_fn, tensor._out_index
        self.leaf = tensor if tensor.grad_fn is None else None
        self.shape, self.dtype = tensor._data.shape, tensor._data.dtype


def edge_of(tensor) -> Edge | None:
    """The Edge a gradient for `tensor` follows, or None when it needs none."""
    from scriptc.tensors import Tensor

    if isinstance(tensor, Tensor) and tensor.requires_grad:
        return Edge(tensor)
    return None


class Node:
    """One recorded op call: `grad_fn` of its outputs. `inputs` holds, per schema argument,
    the Edge (or list of Edges) its gradient flows back along, or None."""

    __slots__ = ("op", "ctx", "inputs", "versions", "n_outputs", "retained", "hooks", "notes", "__weakref__")

    def __init__(self, op, ctx, inputs, versions, n_outputs):
        self.op = op
        self.ctx = ctx
        self.inputs = inputs
        self.versions = versions
        self.n_outputs = n_outputs
        self.retained = None
        self.hooks = None  # {output index: {handle id: hook}}: Tensor.register_hook on a non-leaf
        self.notes = None  # `metadata`, made when something keeps notes on the Node (anomaly mode, saved-tensor hooks)

    def register_prehook(self, hook):
        """Call `hook(grad_outputs)` before this Node's formula runs; a returned tuple replaces them."""
        return _node_hook(self, "prehooks", hook)

    def register_hook(self, hook):
        """Call `hook(grad_inputs, grad_outputs)` after this Node's formula ran (grad_inputs one per
        next_functions entry); a returned tuple replaces grad_inputs."""
        return _node_hook(self, "posthooks", hook)

    @property
    def metadata(self) -> dict:
        """A dict for notes about this Node (anomaly mode keeps the forward traceback here)."""
        if self.notes is None:
            self.notes = {}
        return self.notes

    def name(self) -> str:
        own = getattr(self.op, "node_name", None)
        if own is not None:
            return own
        named = getattr(self.op, "grad_fn_name", None)
        if named is not None:
            named = named if isinstance(named, str) else named(self.ctx)
            if named is not None:
                return named
        base = self.op.name.replace(".", "_").rstrip("_")
        return "".join(p.capitalize() for p in base.split("_")) + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def next_functions(self):
        out = []
        for e in _flat_inputs(self.inputs):
            out.append((None, 0) if e is None else
                       (e.node, e.index) if e.node is not None else (AccumulateGrad(e.leaf), 0))
        return tuple(out)

    def __call__(self, *grad_outputs):
        """The gradients this Node's formula gives its inputs for these output gradients."""
        return call_node(self, *grad_outputs)

    def __getattr__(self, name: str):
        # `_saved_self`, `_saved_result`, `_raw_saved_other`, ...: what the formula saved
        if name.startswith(("_saved_", "_raw_saved_")):
            return saved_attribute(self, name)
        raise AttributeError(f"'Node' object has no attribute '{name}'")


def _node_hook(node, kind: str, hook):
    from collections import OrderedDict

    from scriptc.utils.hooks import RemovableHandle

    hooks = node.metadata.setdefault(kind, OrderedDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _flat_inputs(inputs):
    for item in inputs:
        if isinstance(item, list):
            yield from item
        else:
            yield item


def record(op, args, in_tensors, out_arrays, aux, xp):
    """Attach a Node for this call to its outputs; called by eager dispatch when grad is needed.
    `in_tensors` has, per schema argument, the Tensor, the list of Tensors, or None."""
    from scriptc.tensors import Tensor

    versions = []
    for name in op.save:
        if name == "out":
            continue
        value = in_tensors[op.arg_index[name]]
        if isinstance(value, Tensor) and _gradient_reads(op, name, in_tensors):
            versions.append((f"argument '{name}'", value._vc, value._vc[0], value))
        elif isinstance(value, list):  # index's indices: torch names no argument for a list's tensors
            versions.extend((None, t._vc, t._vc[0], t) for t in value if isinstance(t, Tensor))
    edges = [[edge_of(t) for t in item] if isinstance(item, list) else edge_of(item) for item in in_tensors]
    n_outputs = len(out_arrays) if isinstance(out_arrays, tuple) else 1
    packed = bool(_saved_tensor_hooks.stack) and type(args) is list and pack_op_inputs(op, args, in_tensors)
    ctx = SavedContext(op, args, out_arrays, aux, xp)
    node = Node(op, ctx, edges, versions, n_outputs)
    if packed:
        node.metadata["packed"] = True
    if _anomaly.enabled:
        note_forward(node)
    return node


def _gradient_reads(op, name: str, in_tensors) -> bool:
    """Whether a gradient this call needs reads saved argument `name` (op.saved_for names the inputs whose
    gradients alone read it; torch saves it only when one of them needs a gradient)."""
    readers = op.saved_for.get(name)
    if readers is None:
        return True
    return any(getattr(in_tensors[op.arg_index[reader]], "requires_grad", False) for reader in readers)


def watch_output(node, tensor) -> None:
    """Record the version of an output the gradient formula reads (ops that save 'out')."""
    node.versions.append(("output 0", tensor._vc, tensor._vc[0], None))


def _check_versions(node):
    for what, vc, version, tensor in node.versions:
        if vc[0] != version:
            raise RuntimeError(_modified_message(node, what, tensor, vc[0], version))


def _modified_message(node, what: str | None, tensor, current: int, saved: int) -> str:
    """torch's error for a saved variable written in place since it was saved: its type and sizes, the
    node whose output it is now (the node itself for a saved output), its version and the expected one."""
    if tensor is not None:
        dtype, shape, grad_fn, output = tensor.dtype, list(tensor.shape), tensor.grad_fn, tensor._out_index
    else:  # a saved output: this node's own
        out = node.ctx.out[0] if isinstance(node.ctx.out, tuple) else node.ctx.out
        dtype, shape, grad_fn, output = from_numpy_dtype(out.dtype), list(out.shape), node, 0
    described = f"[{legacy_type_name(dtype)} {shape}]"
    if what is not None and grad_fn is not None:
        described += f", which is output {output} of {re.sub(r'Backward[0-9]*$', '', grad_fn.name())},"
    hint = ("the backtrace further above shows the operation that failed to compute its gradient. The variable "
            "in question was changed in there or anywhere later. Good luck!" if _anomaly.enabled else
            "enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{described} is at version {current}; expected version {saved} instead. Hint: {hint}")


def _topological_order(roots):
    """Nodes reachable from `roots`, each after every Node that feeds gradient into it."""
    order, seen = [], set()
    stack = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for e in _flat_inputs(node.inputs):
            if e is not None and e.node is not None and id(e.node) not in seen:
                stack.append((e.node, False))
    order.reverse()
    return order


def _run_backward(roots, root_grads, retain_graph: bool, targets=None, create_graph: bool = False):
    """The engine. Returns {id(target tensor): gradient} when `targets` is given (autograd.grad);
    otherwise accumulates into leaves' `.grad`. Gradients flow as arrays, or, with `create_graph`,
    as Tensors whose own history the gradient formulas record (higher-order gradients)."""
    from scriptc.autograd.hooks import _leaves as hooked_leaves
    from scriptc.autograd.hooks import leaf_hooks, node_posthooks, node_prehooks, post_accumulate_hooks

    flow = _graph_flow() if create_graph else _ARRAY_FLOW
    buffers: dict[int, list] = {}
    leaf_grads: dict[int, tuple] = {}
    captured: dict[int, object] = {}
    captured_leaves: dict[int, tuple] = {}
    # A target's gradient is what reaches it: a leaf's arrives along its edges; a computed
    # tensor's is the summed gradient of the Node output it is (read when that Node runs).
    leaf_targets = {id(t) for t in targets if t.grad_fn is None} if targets is not None else set()
    output_targets: dict[tuple, list] = {}
    for t in targets or ():
        if t.grad_fn is not None:
            output_targets.setdefault((id(t.grad_fn), t._out_index), []).append(t)

    def reach_leaf(tensor, g):
        into = leaf_grads if targets is None else captured_leaves if id(tensor) in leaf_targets else None
        if into is None:
            return
        entry = into.get(id(tensor))
        if entry is None:
            into[id(tensor)] = (tensor, flow.start(g))
        else:
            entry[1].add(g)

    def reach_node(node, index, g):
        sums = buffers.setdefault(id(node), [None] * node.n_outputs)
        if sums[index] is None:
            sums[index] = flow.start(g)
        else:
            sums[index].add(g)

    node_roots = []
    for tensor, g in zip(roots, root_grads):
        if tensor.grad_fn is None:
            reach_leaf(tensor, g)
            continue
        reach_node(tensor.grad_fn, tensor._out_index, g)
        node_roots.append(tensor.grad_fn)

    order = _topological_order(node_roots)
    needed = None if targets is None else _leading_to_targets(order, leaf_targets, output_targets)
    with set_grad_enabled(create_graph):
        for node in order:
            sums = buffers.pop(id(node), None)
            if sums is None:
                continue
            grads_out = [None if total is None else total.value for total in sums]
            if node.hooks:
                for index, hooks in node.hooks.items():
                    if grads_out[index] is not None:
                        grads_out[index] = flow.through_hooks(hooks.values(), grads_out[index])
            for index, g in enumerate(grads_out):
                for t in output_targets.get((id(node), index), ()):
                    if g is not None:
                        captured[id(t)] = g
            if node.retained:
                for index, ref in node.retained.items():
                    t = ref()
                    if t is not None and grads_out[index] is not None:
                        t.grad = flow.retained(t.grad, grads_out[index])
            if needed is not None and id(node) not in needed:
                continue
            notes = node.notes
            if notes and "prehooks" in notes:
                grads_out = node_prehooks(flow, notes["prehooks"].values(), grads_out)
            if node.ctx is FREED:
                raise RuntimeError(_FREED_MESSAGE)
            _check_versions(node)
            xp, kept = node.ctx.xp, node.ctx
            if node.notes and node.notes.get("packed"):
                node.ctx = unpacked_context(kept)
            if _anomaly.enabled:
                g_in = anomaly_checked(node, lambda: flow.formula(node, grads_out))
            else:
                g_in = flow.formula(node, grads_out)
            node.ctx = kept
            if not retain_graph:
                node.ctx = FREED
                release = getattr(node.op, "release_saved", None)
                if release is not None:
                    release()
            inputs = node.inputs
            if notes and "posthooks" in notes:
                inputs, g_in = node_posthooks(flow, notes["posthooks"].values(), node, xp, g_in, grads_out)
            for item, g in zip(inputs, g_in):
                if item is None or g is None:
                    continue
                pairs = zip(item, g) if isinstance(item, list) else ((item, g),)
                for edge, gi in pairs:
                    if edge is None or gi is None:
                        continue
                    gi = flow.to_edge(xp, gi, edge)
                    if edge.node is None:
                        reach_leaf(edge.leaf, gi)
                    else:
                        reach_node(edge.node, edge.index, gi)
        any_leaf_hooks = bool(hooked_leaves)
        for tensor, total in leaf_grads.values():
            hooks = leaf_hooks(tensor) if any_leaf_hooks else None
            g = total.value if not hooks else flow.through_hooks(hooks, total.value)
            flow.accumulate(tensor, g, owned=total.owned and not hooks)
            if any_leaf_hooks:
                for hook in post_accumulate_hooks(tensor):
                    hook(tensor)
        for key, (tensor, total) in captured_leaves.items():
            hooks = leaf_hooks(tensor) if any_leaf_hooks else None
            captured[key] = total.value if not hooks else flow.through_hooks(hooks, total.value)
    return captured


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")


def _leading_to_targets(order, leaf_targets, output_targets) -> set:
    """The ids of the Nodes whose formulas must run for gradient to reach a target: autograd.grad
    leaves the rest of the graph (a generator behind a critic's input, say) untouched."""
    needed: set = set()
    for node in reversed(order):
        for e in _flat_inputs(node.inputs):
            if e is None:
                continue
            if (id(e.leaf) in leaf_targets if e.node is None else
                    id(e.node) in needed or (id(e.node), e.index) in output_targets):
                needed.add(id(node))
                break
    return needed


def _graph_flow():
    from scriptc.autograd.graph_formulas import GraphFlow

    return GraphFlow()


def _root_grads(tensors, grad_tensors, who: str, create_graph: bool = False):
    """The gradients backward starts from: arrays, or with `create_graph` Tensors (a given grad_output
    that requires grad keeps its history)."""
    from scriptc.tensors import Tensor, wrap

    grads = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: expected Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if create_graph and isinstance(g, Tensor) and g.requires_grad:
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                                   f"output[{i}] has a shape of {list(t.shape)}.")
            grads.append(g if g._data.dtype == _gradient_dtype(t._data.dtype) else g.to(t.dtype))
            continue
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind not in "fV":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{t.dtype!r}")
            seed = meta_array if type(t._data) is MetaArray else np.ones  # (a meta output's gradient is meta)
            grads.append(seed(t._data.shape, _gradient_dtype(t._data.dtype)))
        else:
            g_arr = g._data if isinstance(g, Tensor) else np.asarray(g, dtype=_gradient_dtype(t._data.dtype))
            if _bfloat16.holds(g_arr):
                g_arr = _bfloat16.to_float32(np, g_arr)
            if g_arr.dtype != _gradient_dtype(t._data.dtype):
                g_arr = g_arr.astype(_gradient_dtype(t._data.dtype))  # PyTorch casts a gradient to its output's dtype
            if g_arr.shape != t._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g_arr.shape)} and "
                                   f"output[{i}] has a shape of {list(t._data.shape)}.")
            grads.append(g_arr)
    return [g if isinstance(g, Tensor) else wrap(g) for g in grads] if create_graph else grads


def _as_list(x):
    from scriptc.tensors import Tensor

    if isinstance(x, Tensor):
        return [x]
    return list(x)


_warned_reference_cycle: list = []


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs=None) -> None:
    """Compute the gradient of `tensors` w.r.t. graph leaves and accumulate it into their `.grad`.

    `grad_tensors` is required for non-scalar outputs; `retain_graph=True` keeps the saved values
    so backward can run through the same graph again (it defaults to `create_graph`).
    `create_graph=True` records the backward pass itself, so the accumulated `.grad` can be
    differentiated again (higher-order gradients). `inputs` limits accumulation to those tensors.
    """
    if create_graph and not _warned_reference_cycle:
        _warned_reference_cycle.append(True)  # torch warns once a process
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when creating "
                      "the graph to avoid this. If you have to use this function, make sure to reset the .grad fields "
                      "of your parameters to None after use to break the cycle and avoid the leak.", stacklevel=3)
    tensors = _as_list(tensors)
    grad_tensors = [None] * len(tensors) if grad_tensors is None else _as_list(grad_tensors)
    roots = _root_grads(tensors, grad_tensors, "backward", create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        _run_backward(tensors, roots, retain, create_graph=create_graph)
        return
    inputs = _as_list(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    captured, flow = _captured(tensors, roots, retain, inputs, create_graph)
    for t in inputs:
        if id(t) in captured:
            flow.accumulate(t, captured[id(t)], owned=False)


class _Capturing(threading.local):
    depth = 0


_capturing = _Capturing()


def _captured(outputs, roots, retain: bool, inputs, create_graph: bool):
    """The gradients reaching `inputs` (by id), not accumulated, and the flow they are in."""
    _capturing.depth += 1
    try:
        captured = _run_backward(outputs, roots, retain, targets=inputs, create_graph=create_graph)
    finally:
        _capturing.depth -= 1
    return captured, (_graph_flow() if create_graph else _ARRAY_FLOW)


def _is_checkpoint_valid() -> bool:
    """False while autograd.grad runs: its gradients are returned, never accumulated into `.grad`,
    which reentrant checkpointing relies on (torch.autograd._is_checkpoint_valid)."""
    return _capturing.depth == 0


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The gradients of `outputs` w.r.t. `inputs`, returned (not accumulated into `.grad`).

    With `create_graph=True` the returned gradients carry their own history, so they can be
    differentiated again (a gradient penalty, a MAML inner step). `materialize_grads=True` returns
    zeros for inputs the outputs do not depend on; `allow_unused=True` returns None for them.
    """
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if not inputs:
        raise RuntimeError("grad requires non-empty inputs.")
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} tensors but outputs has {len(outputs)}")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots = _root_grads(outputs, grad_outputs, "grad", create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    captured, flow = _captured(outputs, roots, retain, inputs, create_graph)
    result = []
    for index, t in enumerate(inputs):
        g = captured.get(id(t))
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {index} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            result.append(_zeros_like(t) if materialize_grads else None)
            continue
        result.append(flow.result(g))
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """autograd.grad with is_grads_batched: one backward per index of the grad_outputs' first dim (what
    torch vmaps over), the gradients stacked along a new first dim."""
    from scriptc import stack
    from scriptc.tensors import Size, wrap

    sizes = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            continue
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                               "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                               "shape of corresponding output, but a mismatch was detected: grad_output["
                               f"{i}] has a shape of {Size(g.shape[1:])!r} and output[{i}] has a shape of "
                               f"{Size(out.shape)!r}. If you only want some tensors in `grad_output` to be considered "
                               "batched, consider using vmap.")
        sizes.append(g.shape[0])
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    batch = sizes[0] if sizes else 1
    per_sample = []
    for b in range(batch):
        last = b == batch - 1
        per_sample.append(grad(outputs, inputs, [None if g is None else g[b] for g in grad_outputs],
                               retain_graph=retain_graph if last else True, create_graph=create_graph,
                               allow_unused=allow_unused))
    result = []
    for index, t in enumerate(inputs):
        column = [sample[index] for sample in per_sample]
        if column[0] is None:  # unused: torch materializes after batching, so the zeros are not batched
            result.append(_zeros_like(t) if materialize_grads else None)
        elif create_graph:
            result.append(stack(column))
        else:
            result.append(wrap(np.stack([g._data for g in column])))
    return tuple(result)


def _zeros_like(t):
    from scriptc.tensors import wrap

    return wrap(np.zeros(t._data.shape, dtype=_gradient_dtype(t._data.dtype)))
