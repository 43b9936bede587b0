"""Gradient hooks: Tensor.register_hook, register_post_accumulate_grad_hook, and the Node hooks
(grad_fn.register_prehook / register_hook) the engine runs.

A hook on a leaf lives with the tensor (here, in a table keyed by the tensor's id that forgets a
tensor when it dies); a hook on a computed tensor lives on the Node that made it, at its output
index, as torch keeps it on the grad_fn. Hooks see the summed gradient; one that returns a
Tensor replaces the gradient for everything after it (later hooks, `.grad`, the rest of the graph).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Callable

from scriptc.utils.hooks import RemovableHandle

# id(tensor) -> (weak reference, {handle id: pre-hook}, {handle id: post-accumulate hook})
_leaves: dict[int, tuple] = {}


def _leaf_entry(tensor) -> tuple:
    key = id(tensor)
    entry = _leaves.get(key)
    if entry is None or entry[0]() is not tensor:
        entry = (weakref.ref(tensor, lambda _, key=key: _leaves.pop(key, None)), OrderedDict(), OrderedDict())
        _leaves[key] = entry
    return entry


def _entry(tensor):
    entry = _leaves.get(id(tensor))
    return entry if entry is not None and entry[0]() is tensor else None


def leaf_hooks(tensor) -> list:
    """The gradient hooks registered on a leaf tensor, in registration order."""
    entry = _entry(tensor)
    return list(entry[1].values()) if entry is not None else []


def post_accumulate_hooks(tensor) -> list:
    entry = _entry(tensor)
    return list(entry[2].values()) if entry is not None else []


def register_hook(tensor, hook: Callable) -> RemovableHandle:
    """Tensor.register_hook: call `hook(grad)` whenever a gradient for `tensor` is computed; a hook
    that returns a Tensor replaces the gradient. Returns a handle whose remove() unregisters it."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is None:
        hooks = _leaf_entry(tensor)[1]
    else:
        node = tensor.grad_fn
        if node.hooks is None:
            node.hooks = {}
        hooks = node.hooks.setdefault(tensor._out_index, OrderedDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_post_accumulate_grad_hook(tensor, hook: Callable) -> RemovableHandle:
    """Call `hook(tensor)` after backward has accumulated a gradient into this leaf's `.grad`."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = _leaf_entry(tensor)[2]
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _as_tensors(values) -> tuple:
    from scriptc.tensors import Tensor, wrap

    return tuple(v if v is None or isinstance(v, Tensor) else wrap(v) for v in values)


def _as_flowing(flow, tensors) -> list:
    """Hook results back in the engine's form: arrays for first-order backward, Tensors under create_graph."""
    from scriptc.autograd.graph_formulas import GraphFlow

    if isinstance(flow, GraphFlow):
        return list(tensors)
    return [None if t is None else t._data for t in tensors]


def node_prehooks(flow, hooks, grads_out: list) -> list:
    """Run Node.register_prehook hooks on a Node's output gradients."""
    for hook in list(hooks):
        replaced = hook(_as_tensors(grads_out))
        if replaced is not None:
            grads_out = _as_flowing(flow, replaced)
    return grads_out


def node_posthooks(flow, hooks, node, xp, g_in, grads_out) -> tuple:
    """Run Node.register_hook hooks on a Node's input gradients (one per next_functions entry);
    returns the flat edges and gradients the engine routes instead of the per-argument ones."""
    from scriptc.autograd.engine import _flat_inputs

    edges, grads = [], []
    for item, g in zip(node.inputs, g_in):
        pairs = zip(item, g if g is not None else [None] * len(item)) if isinstance(item, list) else ((item, g),)
        for edge, gi in pairs:
            edges.append(edge)
            grads.append(None if edge is None or gi is None else flow.to_edge(xp, gi, edge))
    edges += [None] * (len(list(_flat_inputs(node.inputs))) - len(edges))
    grads += [None] * (len(edges) - len(grads))
    outputs = _as_tensors(grads_out)
    for hook in list(hooks):
        replaced = hook(_as_tensors(grads), outputs)
        if replaced is not None:
            grads = _as_flowing(flow, replaced)
    return edges, grads
