"""Tape-based reverse-mode autograd: grad mode, the graph of Nodes, backward, grad, gradcheck.

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

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "backward", "grad", "gradcheck",
           "Node"]


class _GradMode(threading.local):
    enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    return _mode.enabled


class set_grad_enabled:
    """Context manager (and function) that sets grad mode, as torch.set_grad_enabled."""

    def __init__(self, mode: bool):
        self.prev = _mode.enabled
        _mode.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _mode.enabled = self.prev
        return False


class _GradModeContext:
    enable = True

    def __enter__(self):
        self.prev = _mode.enabled
        _mode.enabled = self.enable
        return self

    def __exit__(self, *exc):
        _mode.enabled = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapped


class no_grad(_GradModeContext):
    """Disable gradient recording inside `with no_grad():` (or on a decorated function)."""

    enable = False


class enable_grad(_GradModeContext):
    """Re-enable gradient recording inside a no_grad region."""

    enable = True


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
            captured[id(tensor)] = g if id(tensor) not in captured else captured[id(tensor)] + g

    def reach_node(node, index, g):
        buf = buffers.setdefault(id(node), [None] * node.n_outputs)
        buf[index] = g if buf[index] is None else buf[index] + g

    node_roots = []
    for tensor, g in zip(roots, root_grads):
        if tensor.grad_fn is None:
            reach_leaf(tensor, g)
            continue
        reach_node(tensor.grad_fn, tensor._out_index, g)
        node_roots.append(tensor.grad_fn)

    for node in _topological_order(node_roots):
        grads_out = buffers.pop(id(node), None)
        if grads_out is None:
            continue
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
            g_in = node.op.grad(ctx, grads_out[0])
        else:
            outs = ctx.out
            g_in = node.op.grad(ctx, tuple(
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
                gi = _sum_to(ctx.xp.asarray(gi), edge.shape)
                if gi.dtype != edge.dtype:
                    gi = gi.astype(edge.dtype)
                if edge.node is None:
                    reach_leaf(edge.leaf, gi)
                else:
                    reach_node(edge.node, edge.index, gi)
    if targets is None:
        for tensor, total in leaf_grads.values():
            if tensor.grad is None:
                # A copy: one gradient array may flow to several leaves (add passes it through).
                tensor.grad = wrap(np.array(total, copy=True))
            else:
                tensor.grad._data += total
    return captured


def _accumulate_leaf(tensor, g, leaf_grads):
    entry = leaf_grads.get(id(tensor))
    leaf_grads[id(tensor)] = (tensor, g if entry is None else entry[1] + g)


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
            if t._data.dtype.kind != "f":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{t.dtype.name}")
            grads.append(np.ones(t._data.shape, dtype=t._data.dtype))
        else:
            g_arr = g._data if isinstance(g, Tensor) else np.asarray(g, dtype=t._data.dtype)
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
    captured = _run_backward(outputs, roots, bool(retain_graph), targets=inputs)
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

    Inputs that require grad must be float64 tensors. Returns True, or raises (or returns False
    with raise_exception=False) naming the input and the worst element.
    """
    from scriptc.tensors import Tensor, wrap

    inputs = tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for t in diff_inputs:
        if t.dtype.name != "float64":
            raise ValueError("gradcheck expects float64 inputs that require grad, got " + t.dtype.name)

    def outputs_of():
        with no_grad():
            out = func(*inputs)
        return [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]

    base = outputs_of()
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(o.shape) for o in base]
    for t in diff_inputs:
        t.grad = None
    out = func(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
    differentiable = [(o, w) for o, w in zip(outs, weights) if o.requires_grad]
    # Outputs that carry no gradient (an index, a rank) are left out of the numerical side too.
    checked = [i for i, o in enumerate(outs) if o.requires_grad]

    def scalarize(outs, weights):
        return sum(float((outs[i]._data.astype(np.float64) * weights[i]).sum()) for i in checked)
    if differentiable:
        backward([o for o, _ in differentiable], [wrap(w.astype(o._data.dtype)) for o, w in differentiable])
    for index, t in enumerate(diff_inputs):
        analytic = np.zeros(t.shape) if t.grad is None else t.grad._data.astype(np.float64)
        numeric = np.zeros(t.shape)
        data = t._data
        for idx in np.ndindex(*data.shape):
            orig = data[idx]
            data[idx] = orig + eps
            plus = scalarize(outputs_of(), weights)
            data[idx] = orig - eps
            minus = scalarize(outputs_of(), weights)
            data[idx] = orig
            numeric[idx] = (plus - minus) / (2 * eps)
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
