"""Tape-based reverse-mode autograd: the graph of Nodes, backward, grad, gradcheck (modes: grad_mode.py).

Every differentiable op call made while grad mode is on and some input
requires grad records a `Node`: the op (whose table entry holds the gradient
formula), its saved arguments and output, and the version of every tensor
the formula reads. `backward` orders the Nodes reachable from the root,
calls each formula once with the summed gradient of its outputs, and
accumulates into the `.grad` of leaves.
"""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from scriptc.grad_mode import (  # noqa: F401  (re-exported: torch.autograd has them)
    _mode,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.factored import FactoredGradient as _FactoredGradient
from scriptc.ops.factored import product_of_stacked as _product_of_stacked
from scriptc.torch_names import missing_attribute as _missing_attribute

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "backward", "grad", "gradcheck", "Node"]


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

    __slots__ = ("op", "ctx", "inputs", "versions", "n_outputs", "retained", "__weakref__")

    def __init__(self, op, ctx, inputs, versions, n_outputs):
        self.op = op
        self.ctx = ctx
        self.inputs = inputs
        self.versions = versions
        self.n_outputs = n_outputs
        self.retained = None

    def name(self) -> str:
        base = self.op.name.replace(".", "_").rstrip("_")
        return "".join(p.capitalize() for p in base.split("_")) + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()} object>"

    @property
    def next_functions(self):
        out = []
        for e in _flat_inputs(self.inputs):
            out.append((None, 0) if e is None else
                       (e.node, e.index) if e.node is not None else ("AccumulateGrad", 0))
        return tuple(out)


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
        if isinstance(value, Tensor):
            versions.append((f"argument '{name}'", value._vc, value._vc[0], value))
    edges = [[edge_of(t) for t in item] if isinstance(item, list) else edge_of(item) for item in in_tensors]
    n_outputs = len(out_arrays) if isinstance(out_arrays, tuple) else 1
    ctx = SavedContext(op, args, out_arrays, aux, xp)
    return Node(op, ctx, edges, versions, n_outputs)


def _sum_to(g, shape):
    """Sum a broadcast gradient back down to `shape`."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def watch_output(node, tensor) -> None:
    """Record the version of an output the gradient formula reads (ops that save 'out')."""
    node.versions.append(("output 0", tensor._vc, tensor._vc[0], None))


def _check_versions(node):
    for what, vc, version, tensor in node.versions:
        if vc[0] != version:
            described = f"[{tensor.dtype.name} {list(tensor.shape)}], " if tensor is not None else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: {described}which is {what} of {node.name()}, is at version {vc[0]}; expected "
                f"version {version} instead. Hint: the operation that modified it came after the one that "
                "saved it; use out-of-place ops or .clone() before the in-place one.")


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


def _run_backward(roots, root_grads, retain_graph: bool, targets=None):
    """The engine. Returns {id(target tensor): grad array} when `targets` is given (autograd.grad);
    otherwise accumulates into leaves' `.grad`."""
    from scriptc.tensors import wrap

    buffers: dict[int, list] = {}
    leaf_grads: dict[int, tuple] = {}
    captured: dict[int, np.ndarray] = {}
    captured_leaves: dict[int, _GradSum] = {}
    # A target's gradient is what reaches it: a leaf's arrives along its edges; a computed
    # tensor's is the summed gradient of the Node output it is (read when that Node runs).
    leaf_targets = {id(t) for t in targets if t.grad_fn is None} if targets is not None else set()
    output_targets: dict[tuple, list] = {}
    for t in targets or ():
        if t.grad_fn is not None:
            output_targets.setdefault((id(t.grad_fn), t._out_index), []).append(t)

    def reach_leaf(tensor, g):
        if targets is None:
            _accumulate_leaf(tensor, g, leaf_grads)
        elif id(tensor) in leaf_targets:
            if id(tensor) in captured_leaves:
                captured_leaves[id(tensor)].add(g)
            else:
                captured_leaves[id(tensor)] = _GradSum(g)

    def reach_node(node, index, g):
        sums = buffers.setdefault(id(node), [None] * node.n_outputs)
        if sums[index] is None:
            sums[index] = _GradSum(g)
        else:
            sums[index].add(g)

    node_roots = []
    for tensor, g in zip(roots, root_grads):
        if tensor.grad_fn is None:
            reach_leaf(tensor, g)
            continue
        reach_node(tensor.grad_fn, tensor._out_index, g)
        node_roots.append(tensor.grad_fn)

    for node in _topological_order(node_roots):
        sums = buffers.pop(id(node), None)
        if sums is None:
            continue
        grads_out = [None if total is None else total.array for total in sums]
        if node.ctx is FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")
        _check_versions(node)
        ctx = node.ctx
        for index, g in enumerate(grads_out):
            for t in output_targets.get((id(node), index), ()):
                if g is not None:
                    captured[id(t)] = g
        if node.retained:
            for index, ref in node.retained.items():
                t = ref()
                if t is not None and grads_out[index] is not None:
                    g = grads_out[index]
                    t.grad = wrap(g.copy()) if t.grad is None else wrap(t.grad._data + g)
        if node.n_outputs == 1:
            g_in = _gradient(node.op, ctx, grads_out[0])
        else:
            outs = ctx.out
            g_in = _gradient(node.op, ctx, tuple(
                g if g is not None else ctx.xp.zeros(o.shape, dtype=o.dtype) for g, o in zip(grads_out, outs)))
        if not retain_graph:
            node.ctx = FREED
        for item, g in zip(node.inputs, g_in):
            if item is None or g is None:
                continue
            pairs = zip(item, g) if isinstance(item, list) else ((item, g),)
            for edge, gi in pairs:
                if edge is None or gi is None:
                    continue
                if type(gi) is _FactoredGradient and (gi.shape != edge.shape or gi.dtype != edge.dtype):
                    gi = gi.evaluate()
                if type(gi) is not _FactoredGradient:
                    gi = _as_edge_gradient(ctx.xp, gi, edge)
                if edge.node is None:
                    reach_leaf(edge.leaf, gi)
                else:
                    reach_node(edge.node, edge.index, gi)
    if targets is None:
        for tensor, total in leaf_grads.values():
            if _bfloat16.holds(tensor._data):
                if tensor.grad is not None:
                    total.add(_bfloat16.to_float32(np, tensor.grad._data))
                tensor.grad = wrap(_bfloat16.from_values(np, total.array))
                continue
            if tensor.grad is None:
                # Not owned: the same gradient array may have flowed to several leaves (add passes it on).
                tensor.grad = wrap(np.asarray(total.array) if total.owned else np.array(total.array, copy=True))
            else:
                tensor.grad._data += total.array
    for key, total in captured_leaves.items():
        captured[key] = total.array
    return captured


def as_array_gradient(g, shape):
    """A formula's gradient (possibly factored or broadcast) as a plain array of `shape`, for hooks that
    show it to the user."""
    if type(g) is _FactoredGradient:
        g = g.evaluate()
    return _sum_to(np.asarray(g), tuple(shape))


def _as_edge_gradient(xp, g, edge: Edge):
    """A formula's gradient for one input as that input's gradient: summed down to its shape (from a
    broadcast), in its dtype."""
    g = _sum_to(xp.asarray(g), edge.shape)
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


# Factors are multiplied once they hold this many times the product's elements: the longer the stacked
# GEMM the faster BLAS runs it (a weight's whole 35-step window at word_language_model's size is one),
# while the memory the factors hold stays a small multiple of the weight's.
_FACTORS_PER_PRODUCT = 4


class _GradSum:
    """The running sum of the gradients that reach one tensor. The first array is kept as given (a
    formula may have passed the same array on to several inputs); the second makes a sum this object
    owns, and later ones are added into it in place. Factored gradients (a weight's g.T @ x from each
    step of a recurrence) are kept as factors and multiplied as one product of the stacked factors
    when the sum is read, or sooner when the factors grow a few times larger than the product."""

    __slots__ = ("dense", "owned", "factors", "factor_size")

    def __init__(self, g):
        self.dense, self.owned, self.factors, self.factor_size = None, False, [], 0
        self.add(g)

    def add(self, g) -> None:
        if type(g) is not _FactoredGradient:
            self._add_dense(g, owned=False)
            return
        self.factors.append(g)
        self.factor_size += g.factor_size
        if self.factor_size >= _FACTORS_PER_PRODUCT * g.shape[0] * g.shape[1]:
            self._multiply_factors()

    @property
    def array(self):
        if self.factors:
            self._multiply_factors()
        return self.dense

    def _multiply_factors(self) -> None:
        product = _product_of_stacked(self.factors)
        self.factors, self.factor_size = [], 0
        self._add_dense(product, owned=True)

    def _add_dense(self, g, owned: bool) -> None:
        if self.dense is None:
            self.dense, self.owned = g, owned
        elif self.owned:
            self.dense += g
        else:
            self.dense, self.owned = self.dense + g, True


def _accumulate_leaf(tensor, g, leaf_grads):
    entry = leaf_grads.get(id(tensor))
    if entry is None:
        leaf_grads[id(tensor)] = (tensor, _GradSum(g))
    else:
        entry[1].add(g)


def _root_grads(tensors, grad_tensors, who: str):
    from scriptc.tensors import Tensor

    grads = []
    for t, g in zip(tensors, grad_tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: expected Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind not in "fV":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{t.dtype!r}")
            grads.append(np.ones(t._data.shape, dtype=_gradient_dtype(t._data.dtype)))
        else:
            g_arr = g._data if isinstance(g, Tensor) else np.asarray(g, dtype=_gradient_dtype(t._data.dtype))
            if _bfloat16.holds(g_arr):
                g_arr = _bfloat16.to_float32(np, g_arr)
            if g_arr.dtype != _gradient_dtype(t._data.dtype):
                g_arr = g_arr.astype(_gradient_dtype(t._data.dtype))  # PyTorch casts a gradient to its output's dtype
            if g_arr.shape != t._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g_arr.shape)} and "
                                   f"output[0] has a shape of {list(t._data.shape)}.")
            grads.append(g_arr)
    return grads


def _as_list(x):
    from scriptc.tensors import Tensor

    if isinstance(x, Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs=None) -> None:
    """Compute the gradient of `tensors` w.r.t. graph leaves and accumulate it into their `.grad`.

    `grad_tensors` is required for non-scalar outputs; `retain_graph=True` keeps the saved values
    so backward can run through the same graph again.
    """
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by scriptc")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...) is not supported; use scriptc.autograd.grad")
    tensors = _as_list(tensors)
    grad_tensors = [None] * len(tensors) if grad_tensors is None else _as_list(grad_tensors)
    roots = _root_grads(tensors, grad_tensors, "backward")
    _run_backward(tensors, roots, bool(retain_graph))


class _Capturing(threading.local):
    depth = 0


_capturing = _Capturing()


def _is_checkpoint_valid() -> bool:
    """False while autograd.grad runs: its gradients are returned, never accumulated into `.grad`,
    which reentrant checkpointing relies on (torch.autograd._is_checkpoint_valid)."""
    return _capturing.depth == 0


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple:
    """The gradients of `outputs` w.r.t. `inputs`, returned (not accumulated into `.grad`)."""
    from scriptc.tensors import wrap

    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by scriptc")
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots = _root_grads(outputs, grad_outputs, "grad")
    _capturing.depth += 1
    try:
        captured = _run_backward(outputs, roots, bool(retain_graph), targets=inputs)
    finally:
        _capturing.depth -= 1
    result = []
    for t in inputs:
        g = captured.get(id(t))
        if g is None and not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        result.append(None if g is None else wrap(np.array(g, copy=True)))
    return tuple(result)


def gradcheck(func, inputs: Sequence, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Compare autograd's gradients of `func(*inputs)` with float64 central differences.

    Inputs that require grad must be float64 or complex128 tensors; a complex input's gradient is
    d/d(real part) + i d/d(imaginary part) of the real-valued test function, PyTorch's convention.
    Returns True, or raises (or returns False with raise_exception=False) naming the input and the
    worst element.
    """
    from scriptc.tensors import Tensor, wrap

    inputs = tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for t in diff_inputs:
        if t.dtype.name not in ("float64", "complex128"):
            raise ValueError("gradcheck expects float64 or complex128 inputs that require grad, got " + t.dtype.name)

    def outputs_of():
        with no_grad():
            out = func(*inputs)
        return [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]

    base = outputs_of()
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(o.shape) + (1j * rng.standard_normal(o.shape) if o._data.dtype.kind == "c" else 0)
               for o in base]
    for t in diff_inputs:
        t.grad = None
    out = func(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
    differentiable = [(o, w) for o, w in zip(outs, weights) if o.requires_grad]
    # Outputs that carry no gradient (an index, a rank) are left out of the numerical side too.
    checked = [i for i, o in enumerate(outs) if o.requires_grad]

    def scalarize(outs, weights):
        # Re(sum(conj(w) * out)): its gradient with respect to a complex output is w itself.
        return sum(float((np.conj(weights[i]) * outs[i]._data).real.sum()) for i in checked)
    if differentiable:
        backward([o for o, _ in differentiable], [wrap(w.astype(o._data.dtype)) for o, w in differentiable])
    for index, t in enumerate(diff_inputs):
        data = t._data
        analytic = np.zeros(t.shape, data.dtype) if t.grad is None else t.grad._data
        numeric = np.zeros(t.shape, data.dtype)
        for idx in np.ndindex(*data.shape):
            orig = data[idx]
            for step in ((1.0, 1j) if data.dtype.kind == "c" else (1.0,)):
                data[idx] = orig + eps * step
                plus = scalarize(outputs_of(), weights)
                data[idx] = orig - eps * step
                minus = scalarize(outputs_of(), weights)
                data[idx] = orig
                numeric[idx] += step * (plus - minus) / (2 * eps)
        if not np.allclose(analytic, numeric, atol=atol, rtol=rtol):
            worst = int(np.argmax(np.abs(analytic - numeric)))
            message = (f"Jacobian mismatch for input {index} (shape {list(t.shape)}): at flat index {worst} "
                       f"analytical {analytic.reshape(-1)[worst]:.8g} vs numerical {numeric.reshape(-1)[worst]:.8g}")
            if raise_exception:
                raise GradcheckError(message)
            return False
        t.grad = None
    return True


class GradcheckError(RuntimeError):
    """gradcheck found analytical and numerical gradients that differ."""


__getattr__ = _missing_attribute("torch.autograd", __name__)
