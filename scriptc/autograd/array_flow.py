"""First-order backward's arithmetic: the op table's gradient formulas on arrays.

A formula sees a `SavedContext` (the call's arguments by schema name, `out`, `aux`, `xp`) and
returns one gradient per argument; `_ArrayFlow` is how the engine sums, routes and accumulates
those arrays (graph_formulas.GraphFlow is its create_graph counterpart, on Tensors).
"""

from __future__ import annotations

import numpy as np

from scriptc.autograd.grad_sum import GradSum as _GradSum
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.factored import FactoredGradient as _FactoredGradient
from scriptc.ops.meta import MetaArray as _MetaArray
from scriptc.ops.meta import meta_array as _meta_array
from scriptc.ops.schema import OpDef as _OpDef


class SavedContext:
    """What a gradient formula sees: the call's arguments by schema name, `out`, `aux`, `xp`."""

    __slots__ = ("op", "args", "out", "aux", "xp")

    def __init__(self, op, args, out, aux, xp):
        self.op, self.args, self.out, self.aux, self.xp = op, args, out, aux, xp

    def __getattr__(self, name):
        try:
            return self.args[self.op.arg_index[name]]
        except KeyError:
            raise AttributeError(f"{self.op.name} has no argument '{name}'") from None


def _sum_to(g, shape):
    """Sum a broadcast gradient back down to `shape`."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def _meta_gradients(node) -> list:
    """A Node's input gradients on the meta device: a gradient has its input's shape and dtype, and
    there are no values to compute it from."""
    def of(edge):
        return None if edge is None else _meta_array(edge.shape, edge.dtype)
    return [None if item is None else [of(e) for e in item] if isinstance(item, list) else of(item)
            for item in node.inputs]


class _ArrayFlow:
    """First-order backward: gradients are arrays and the op table's formulas compute them."""

    start = _GradSum

    @staticmethod
    def formula(node, grads_out):
        if any(type(g) is _MetaArray for g in grads_out):
            return _meta_gradients(node)
        if type(node.op) is not _OpDef:
            own = getattr(node.op, "node_gradient", None)
            if own is not None:
                return own(node, grads_out, False)
        ctx = node.ctx
        if node.n_outputs == 1:
            return _gradient(node.op, ctx, grads_out[0])
        return _gradient(node.op, ctx, tuple(
            g if g is not None else ctx.xp.zeros(o.shape, dtype=o.dtype) for g, o in zip(grads_out, ctx.out)))

    @staticmethod
    def to_edge(xp, g, edge):
        if type(g) is _FactoredGradient and (g.shape != edge.shape or g.dtype != edge.dtype):
            g = g.evaluate()
        return g if type(g) is _FactoredGradient else _as_edge_gradient(xp, g, edge)

    @staticmethod
    def through_hooks(hooks, g):
        from scriptc.tensors import wrap

        for hook in list(hooks):
            replaced = hook(wrap(g))
            if replaced is not None:
                g = _checked_hook_result(hook, replaced, g)._data
        return g

    @staticmethod
    def retained(old, g):
        from scriptc.tensors import wrap

        return wrap(g.copy()) if old is None else wrap(old._data + g)

    @staticmethod
    def accumulate(tensor, g, owned: bool) -> None:
        if type(g) is _MetaArray or type(tensor._data) is _MetaArray:
            from scriptc.tensors import wrap

            tensor.grad = wrap(_meta_array(tensor._data.shape, g.dtype))  # (no values to add up)
            return
        if tensor.grad is not None and not _bfloat16.holds(tensor._data):
            tensor.grad._data += g
            return
        from scriptc.tensors import wrap

        if _bfloat16.holds(tensor._data):
            if tensor.grad is not None:
                g = g + _bfloat16.to_float32(np, tensor.grad._data)
            tensor.grad = wrap(_bfloat16.from_values(np, g))
        else:
            # Not owned: the same gradient array may have flowed to several leaves (add passes it on).
            tensor.grad = wrap(np.asarray(g) if owned else np.array(g, copy=True))

    @staticmethod
    def result(g):
        from scriptc.tensors import wrap

        return wrap(g.copy() if type(g) is _MetaArray else np.array(g, copy=True))


_ARRAY_FLOW = _ArrayFlow()


def _checked_hook_result(hook, replaced, g):
    """A tensor hook's replacement for gradient g (an array or a Tensor): same size and dtype, as torch."""
    from scriptc.tensors import Tensor, wrap

    if not isinstance(replaced, Tensor):
        raise TypeError(f"expected Tensor, but hook returned '{type(replaced).__name__}'")
    name = getattr(hook, "__name__", repr(hook))
    if tuple(replaced.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    original = g if isinstance(g, Tensor) else wrap(g)
    if replaced.dtype != original.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {original.type()} got "
                           f"{replaced.type()})")
    return replaced


def _as_edge_gradient(xp, g, edge):
    """A formula's gradient for one input as that input's gradient: summed down to its shape (from a
    broadcast), in its dtype."""
    g = _sum_to(g if type(g) is _MetaArray else xp.asarray(g), edge.shape)
    if g.dtype != edge.dtype:
        if g.dtype.kind == "c" and edge.dtype.kind != "c":
            g = g.real  # a real input of a complex result gets the real part (PyTorch's rule)
        # bfloat16 tensors' gradients flow as float32 (their formulas compute in float32).
        g = g.astype(_gradient_dtype(edge.dtype))
    return g


def _gradient(op, ctx, grads):
    """The op's gradient formula applied to the output gradient(s).

    On complex gradients PyTorch's convention (the conjugate Wirtinger derivative) turns a formula
    written as g * f'(z) into g * conj(f'(z)): conj(formula(conj(g))), unless the formula handles
    complex inputs itself (`complex_aware`)."""
    several = isinstance(grads, tuple)
    flat = grads if several else (grads,)
    ctx = _in_float32(ctx)
    # A record that is not a table op (utils.checkpoint's recomputation) differentiates by autograd itself.
    if getattr(op, "complex_aware", True) or not any(g is not None and g.dtype.kind == "c" for g in flat):
        return op.grad(ctx, grads)
    conjugated = tuple(_conj(g) for g in flat)
    return tuple(_conj(g) for g in op.grad(ctx, conjugated if several else conjugated[0]))


def _in_float32(ctx):
    """ctx, or a copy with its bfloat16 arrays (inputs, outputs) as float32 for the formula to compute with."""
    outs = ctx.out if isinstance(ctx.out, (tuple, list)) else (ctx.out,)
    if not any(_bfloat16.holds(a) or (type(a) in (list, tuple) and any(_bfloat16.holds(t) for t in a))
               for a in list(ctx.args) + list(outs)):
        return ctx
    widened_out = _bfloat16.widen_saved(ctx.xp, outs)
    out = type(ctx.out)(widened_out) if isinstance(ctx.out, (tuple, list)) else widened_out[0]
    return SavedContext(ctx.op, _bfloat16.widen_saved(ctx.xp, ctx.args), out, ctx.aux, ctx.xp)


def _gradient_dtype(np_dtype):
    return np.dtype(np.float32) if np_dtype == _bfloat16.STORAGE else np_dtype


def _conj(g):
    if isinstance(g, list):
        return [_conj(item) for item in g]
    return g.conj() if g is not None and getattr(g, "dtype", None) is not None and g.dtype.kind == "c" else g
