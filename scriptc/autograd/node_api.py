"""What torch's autograd graph Nodes expose besides backward: the tensors a Node saved for its
gradient formula (`grad_fn._saved_self`, `_saved_result`, and `_raw_saved_self.register_hooks(pack,
unpack)`), calling a Node on gradients of its outputs, and the AccumulateGrad node that stands for
a leaf in `next_functions` (the autograd_saved_tensors_hooks tutorial walks all of these)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from scriptc.autograd.graph import _Packed, unpack_saved, unpacked_context

_SAVED, _RAW_SAVED = "_saved_", "_raw_saved_"

_HOOKS_SET = ("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of "
              "hooks is allowed at a time.")
_HOOKS_AFTER_FREE = ("Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
                     "of the graph are freed when you call .backward() or autograd.grad(). Specify "
                     "retain_graph=True if you need to backward through the graph a second time or if you need "
                     "to access saved variables after calling backward.")


class AccumulateGrad:
    """The Node a leaf's gradient flows into (its `.grad`): what `next_functions` names for a leaf."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class SavedTensor:
    """One tensor a Node saved (`grad_fn._raw_saved_<name>`): `register_hooks(pack_hook,
    unpack_hook)` packs it now and unpacks it when backward reads it, once per saved tensor."""

    __slots__ = ("node", "index")

    def __init__(self, node, index: int):
        self.node, self.index = node, index

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        from scriptc.autograd.engine import FREED
        from scriptc.tensors import wrap

        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks expects two callables: pack_hook and unpack_hook")
        ctx = self.node.ctx
        if ctx is FREED:
            raise RuntimeError(_HOOKS_AFTER_FREE)
        saved = ctx.args[self.index]
        if type(saved) is _Packed:
            raise RuntimeError(_HOOKS_SET)
        tensor = _original_tensor(self.node, self.index)
        ctx.args[self.index] = _Packed(pack_hook(tensor if tensor is not None else wrap(saved)), unpack_hook)
        self.node.metadata["packed"] = True


def saved_attribute(node, name: str):
    """`_saved_<argument>` (the tensor or value a Node's formula reads; `_saved_result` for the output
    it reads) or `_raw_saved_<argument>` (its SavedTensor) of a recorded op's Node; `name` starts
    with one of the two."""
    if name.startswith(_RAW_SAVED):
        index = _saved_index(node, name[len(_RAW_SAVED):], name)
        if index == "out" or (node.ctx is not _freed() and not _is_tensor_argument(node.ctx.args[index])):
            raise AttributeError(f"'{node.name()}' object has no attribute '{name}'")
        return SavedTensor(node, index)
    return _saved_value(node, _saved_index(node, name[len(_SAVED):], name))


def call_node(node, *grad_outputs):
    """The gradients a Node's formula gives its inputs for these output gradients: one per
    `next_functions` entry (None where that input needs none), a Tensor when there is one."""
    from scriptc.autograd.array_flow import _ARRAY_FLOW
    from scriptc.autograd.engine import _FREED_MESSAGE, FREED, _check_versions, _flat_inputs
    from scriptc.tensors import Tensor, wrap

    if node.ctx is FREED:
        raise RuntimeError(_FREED_MESSAGE)
    if len(grad_outputs) != node.n_outputs:
        raise TypeError(f"expected {node.n_outputs} arguments, got {len(grad_outputs)} instead")
    arrays = [g._data if isinstance(g, Tensor) else g for g in grad_outputs]
    _check_versions(node)
    kept = node.ctx
    if node.notes and node.notes.get("packed"):
        node.ctx = unpacked_context(kept)
    try:
        per_argument = _ARRAY_FLOW.formula(node, arrays)
    finally:
        node.ctx = kept
    flat_gradients = []
    for item, g in zip(node.inputs, per_argument):
        pairs = zip(item, g if g is not None else [None] * len(item)) if isinstance(item, list) else ((item, g),)
        flat_gradients.extend(None if edge is None or gi is None else wrap(_ARRAY_FLOW.to_edge(kept.xp, gi, edge))
                              for edge, gi in pairs)
    flat_gradients.extend([None] * (sum(1 for _ in _flat_inputs(node.inputs)) - len(flat_gradients)))
    return flat_gradients[0] if len(flat_gradients) == 1 else tuple(flat_gradients)


def _saved_index(node, saved: str, attribute: str):
    """The position in the Node's call arguments of what `_saved_<saved>` reads ('out' for the result)."""
    op = node.op
    save, arg_index = getattr(op, "save", None), getattr(op, "arg_index", None)
    if save is None or arg_index is None or node.ctx is None:
        raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
    if saved == "result" and "out" in save:
        return "out"
    index = arg_index.get(saved)
    freed = node.ctx is _freed()
    if index is None or (saved not in save and (freed or _is_tensor_argument(node.ctx.args[index]))):
        raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
    return index


def _saved_value(node, index):
    from scriptc.autograd.engine import _FREED_MESSAGE, FREED, _check_versions
    from scriptc.tensors import wrap

    if node.ctx is FREED:
        raise RuntimeError(_FREED_MESSAGE)
    if index == "out":
        out = node.ctx.out
        return tuple(wrap(o) for o in out) if isinstance(out, tuple) else wrap(out)
    saved = node.ctx.args[index]
    if type(saved) is _Packed:
        return unpack_saved(saved)
    if not _is_tensor_argument(saved):
        return saved
    _check_versions(node)
    tensor = _original_tensor(node, index)
    if tensor is not None:
        return tensor
    return [wrap(a) for a in saved] if isinstance(saved, list) else wrap(saved)


def _original_tensor(node, index: int):
    """The tensor the op was called with at argument `index` (as torch, _saved_self is x itself)."""
    name = next(n for n, i in node.op.arg_index.items() if i == index)
    for what, _, _, tensor in node.versions:
        if what == f"argument '{name}'":
            return tensor
    return None


def _freed():
    from scriptc.autograd.engine import FREED

    return FREED


def _is_tensor_argument(value) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_is_tensor_argument(v) for v in value)
    return type(value) is _Packed or isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__")
