"""create_graph: the backward pass recorded as ops, so gradients can be differentiated again.

With `create_graph=True` the engine hands each Node Tensors (not arrays) and takes back Tensors
computed by recorded ops. A Node's gradient comes from, in this order:

* its op's own `graph_grad` (autograd.Function nodes run the user's backward with grad on);
* a differentiable formula below, written with Tensor ops (mul, matmul, conv2d, tanh, mse_loss ...);
* for an op that is linear in its tensor inputs (add, sum, view, cat, avg_pool2d ...): the table's
  formula on arrays, recorded as one Node whose own gradient is the op applied to the incoming
  gradients (the adjoint of a linear op's adjoint is the op);
* for an elementwise op whose slope is constant where it is defined (relu, leaky_relu, clamp,
  dropout ...): g times that slope, the slope read off the table's formula as a constant;
* otherwise the table's formula on arrays, behind a Node that raises torch's "derivative for ...
  is not implemented" if anything differentiates through it again.
"""

from __future__ import annotations

import numpy as np

from scriptc.autograd.array_flow import _ARRAY_FLOW, _checked_hook_result, _gradient_dtype
from scriptc.autograd.engine import record
from scriptc.autograd.formulas import FORMULAS as _FORMULAS
from scriptc.autograd.formulas import table_op as _op
from scriptc.ops.execute import run_kernel
from scriptc.ops.factored import FactoredGradient


class _TensorSum:
    """The running sum of the Tensor gradients that reach one tensor, recorded as adds."""

    __slots__ = ("value", "owned")

    def __init__(self, g):
        self.value, self.owned = g, False

    def add(self, g) -> None:
        self.value = self.value + g


class GraphFlow:
    """The engine's arithmetic when create_graph=True: every step is a recorded Tensor op."""

    start = _TensorSum

    @staticmethod
    def formula(node, grads_out):
        return graph_gradient(node, grads_out)

    @staticmethod
    def to_edge(xp, g, edge):
        if tuple(g.shape) != tuple(edge.shape):
            g = _sum_to(g, edge.shape)
        wanted = _gradient_dtype(edge.dtype)
        if g._data.dtype != wanted:
            if g.is_complex() and wanted.kind != "c":
                g = g.real
            g = _op("to.dtype", g, _as_scalar_type(wanted))
        return g

    @staticmethod
    def through_hooks(hooks, g):
        for hook in list(hooks):
            replaced = hook(g)
            if replaced is not None:
                g = _checked_hook_result(hook, replaced, g)
        return g

    @staticmethod
    def retained(old, g):
        return g if old is None else old + g

    @staticmethod
    def accumulate(tensor, g, owned: bool) -> None:
        tensor.grad = g if tensor.grad is None else tensor.grad + g

    @staticmethod
    def result(g):
        return g


def _as_scalar_type(np_dtype):
    from scriptc.types import from_numpy_dtype

    return from_numpy_dtype(np_dtype)


def _sum_to(g, shape):
    """Sum a broadcast gradient back down to `shape`, with recorded ops."""
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1]
    if dims:
        g = _op("sum", g, dims, True)
    return _op("reshape", g, list(shape))


class GraphContext:
    """What a differentiable formula sees: the call's arguments by schema name as Tensors that are
    part of the graph (so a formula's result depends on them), `out` likewise."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __getattr__(self, name):
        node = self.node
        index = node.ctx.op.arg_index[name]
        return _as_graph_tensor(node.ctx.args[index], node.inputs[index])

    @property
    def out(self):
        node = self.node
        outs = node.ctx.out
        if node.n_outputs == 1:
            return _output_tensor(node, outs if not isinstance(outs, (tuple, list)) else outs[0], 0)
        return tuple(_output_tensor(node, o, i) for i, o in enumerate(outs))


def _as_graph_tensor(value, edge):
    from scriptc.tensors import wrap

    if isinstance(edge, list):
        return [_as_graph_tensor(v, e) for v, e in zip(value, edge)]
    if edge is None:
        return wrap(value) if isinstance(value, np.ndarray) else value
    if edge.node is None:
        return edge.leaf
    t = wrap(value)
    t.requires_grad, t.grad_fn, t._out_index = True, edge.node, edge.index
    return t


def _output_tensor(node, array, index):
    from scriptc.tensors import wrap

    t = wrap(array)
    t.requires_grad, t.grad_fn, t._out_index = True, node, index
    return t


def graph_gradient(node, grads_out: list) -> tuple:
    """One gradient per schema argument of node's op (a list for a tensor-list argument), as Tensors."""
    op = node.op
    own = getattr(op, "node_gradient", None)
    if own is not None:
        return own(node, grads_out, True)
    name = getattr(op, "name", None)
    if name in _FORMULAS:
        g = grads_out[0] if node.n_outputs == 1 else tuple(
            g if g is not None else _zeros(o) for g, o in zip(grads_out, node.ctx.out))
        result = _FORMULAS[name](GraphContext(node), g)
        if result is not None:
            return result
    if name in _LINEAR:
        return _linear_transpose(node, grads_out, _LINEAR[name])
    if name in _MULTILINEAR and node.n_outputs == 1 and grads_out[0] is not None:
        return _multilinear_gradient(node, grads_out[0], _MULTILINEAR[name])
    if name in _CONSTANT_SLOPE and node.n_outputs == 1 and grads_out[0] is not None:
        return _times_constant_slope(node, grads_out[0])
    base = getattr(op, "base_name", name)
    return once_differentiable_result(node, grads_out, f"derivative for aten::{base}_backward is not implemented")


def _zeros(array):
    from scriptc.tensors import wrap

    return wrap(np.zeros(array.shape, dtype=_gradient_dtype(array.dtype)))


def _array_gradient(node, grads_out) -> tuple:
    """The table's formula on arrays, every factored gradient multiplied out."""
    arrays = [None if g is None else g._data for g in grads_out]
    result = _ARRAY_FLOW.formula(node, arrays)
    return tuple([_dense(x) for x in item] if isinstance(item, list) else _dense(item) for item in result)


def _dense(g):
    if g is None:
        return None
    return g.evaluate() if type(g) is FactoredGradient else np.asarray(g)


class _NotTwiceDifferentiable:
    """The op-like record behind a gradient computed without a differentiable formula: using it
    in a further backward raises `message`."""

    save = ()
    complex_aware = True

    def __init__(self, name: str, message: str):
        self.name, self.message = name, message

    def grad(self, ctx, grads):
        raise RuntimeError(self.message)


def once_differentiable_result(node, grads_out, message: str) -> tuple:
    """The array formula's gradients as Tensors that raise `message` when differentiated again."""
    return _behind_stub(node, grads_out, _array_gradient(node, grads_out), message)


def _behind_stub(node, grads_out, arrays, message: str) -> tuple:
    """`arrays` (node's gradients) as Tensors behind a Node that raises `message` when differentiated."""
    from scriptc.tensors import wrap

    flat = [a for item in arrays for a in (item if isinstance(item, list) else (item,)) if a is not None]
    wrapped = {id(a): wrap(a) for a in flat}
    sources = [g for g in grads_out if g is not None and g.requires_grad]
    sources += [_edge_tensor(e) for item in node.inputs for e in _flat(item) if e is not None]
    if sources and flat:
        name = getattr(node.op, "name", "function") + "_backward"
        stub = record(_NotTwiceDifferentiable(name, message), (), [sources], tuple(flat), None, np)
        for i, a in enumerate(flat):
            t = wrapped[id(a)]
            t.requires_grad, t.grad_fn, t._out_index = True, stub, i
    return tuple([None if a is None else wrapped[id(a)] for a in item] if isinstance(item, list)
                 else None if item is None else wrapped[id(item)] for item in arrays)


def _flat(value):
    return value if isinstance(value, list) else [value]


def _edge_tensor(edge):
    """A tensor whose gradient follows `edge`: the leaf, or a stand-in for the Node output it names."""
    from scriptc.tensors import wrap

    if edge.node is None:
        return edge.leaf
    t = wrap(np.broadcast_to(np.zeros((), edge.dtype), edge.shape))
    t.requires_grad, t.grad_fn, t._out_index = True, edge.node, edge.index
    return t


# --- linear ops: the adjoint's adjoint is the op ------------------------------------------

class _LinearTranspose:
    """The op-like record of a linear op's gradient: its inputs are the op's output gradients, its
    outputs the gradients of the op's linear arguments (`slots`: (argument index, list position))."""

    save = ()
    complex_aware = True

    def __init__(self, op, args, linear_args, slots):
        self.op, self.args, self.linear_args, self.slots = op, args, linear_args, slots
        self.name = op.name + "_backward"

    def _arguments(self, grads, zeros_like):
        args = [list(a) if isinstance(a, list) else a for a in self.args]
        for i in self.linear_args:
            if isinstance(args[i], list):
                args[i] = [zeros_like(a) for a in args[i]]
            elif args[i] is not None:
                args[i] = zeros_like(args[i]) if isinstance(args[i], np.ndarray) else 0
        for (i, j), gg in zip(self.slots, grads):
            if gg is None:
                continue
            if j is None:
                args[i] = gg
            else:
                args[i][j] = gg
        return args

    def node_gradient(self, node, grads_out, create_graph: bool) -> tuple:
        from scriptc.tensors import call, wrap

        if create_graph:
            args = self._arguments(grads_out, lambda a: wrap(np.zeros_like(a)))
            out = call(self.op, tuple(wrap(a) if isinstance(a, np.ndarray) else a for a in args))
        else:
            out = run_kernel(self.op, np, self._arguments(grads_out, np.zeros_like))
            if self.op.aux:
                out = out[0]
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _linear_transpose(node, grads_out, linear_names) -> tuple:
    from scriptc.tensors import wrap

    op = node.ctx.op
    linear_args = tuple(op.arg_index[n] for n in linear_names)
    arrays = _array_gradient(node, grads_out)
    slots, flat = [], []
    for i in linear_args:
        item = arrays[i]
        for j, a in (enumerate(item) if isinstance(item, list) else ((None, item),)):
            if a is not None:
                slots.append((i, j))
                flat.append(a)
    tensors = [wrap(a) for a in flat]
    if any(g is not None and g.requires_grad for g in grads_out) and flat:
        transpose = _LinearTranspose(op, node.ctx.args, linear_args, slots)
        stub = record(transpose, (), list(grads_out), tuple(flat), None, np)
        for k, t in enumerate(tensors):
            t.requires_grad, t.grad_fn, t._out_index = True, stub, k
    result: list = [None] * len(arrays)
    for (i, j), t in zip(slots, tensors):
        if j is None:
            result[i] = t
        else:
            if result[i] is None:
                result[i] = [None] * len(arrays[i])
            result[i][j] = t
    return tuple(result)


# Linear ops and their linear arguments: every other argument is an index, a size or a flag.
_LINEAR = {
    "add": ("self", "other"), "sub": ("self", "other"), "neg": ("self",), "positive": ("self",),
    "sum": ("self",), "mean": ("self",), "clone": ("self",), "contiguous": ("self",), "to.dtype": ("self",),
    "view": ("self",), "reshape": ("self",), "flatten": ("self",), "unflatten": ("self",), "ravel": ("self",),
    "expand": ("self",), "broadcast_to": ("self",), "permute": ("self",), "transpose": ("self",), "t": ("self",),
    "swapaxes": ("self",), "movedim": ("self",), "squeeze": ("self",), "unsqueeze": ("self",),
    "select": ("self",), "slice": ("self",), "narrow": ("self",), "index": ("self",), "index_select": ("self",),
    "gather": ("self",), "take_along_dim": ("self",), "cat": ("tensors",), "stack": ("tensors",),
    "hstack": ("tensors",), "vstack": ("tensors",), "split": ("self",), "chunk": ("self",), "unbind": ("self",),
    "tensor_split": ("self",), "repeat": ("self",), "tile": ("self",), "flip": ("self",), "roll": ("self",),
    "diagonal": ("self",), "diag_embed": ("self",), "trace": ("self",), "tril": ("self",), "triu": ("self",),
    "where": ("self", "other"), "masked_fill": ("self", "value"), "pad": ("input", "value"),
    "avg_pool1d": ("input",), "avg_pool2d": ("input",), "avg_pool3d": ("input",),
    "adaptive_avg_pool1d": ("input",), "adaptive_avg_pool2d": ("input",), "adaptive_avg_pool3d": ("input",),
    "pixel_shuffle": ("self",), "pixel_unshuffle": ("self",), "im2col": ("self",), "col2im": ("self",),
    "nll_loss": ("input",), "index_add": ("self", "source"), "cumsum": ("self",), "interpolate": ("input",),
    "deg2rad": ("self",), "rad2deg": ("self",), "diag": ("self",), "fliplr": ("self",), "flipud": ("self",),
    "rot90": ("self",), "take": ("self",), "linalg_diagonal": ("A",), "narrow_copy": ("self",),
    "dstack": ("tensors",), "column_stack": ("tensors",), "block_diag": ("tensors",), "atleast_1d": ("self",),
    "atleast_2d": ("self",), "atleast_3d": ("self",), "hsplit": ("self",), "vsplit": ("self",),
    "dsplit": ("self",), "unfold": ("self",), "diff": ("self", "prepend", "append"),
}

# Elementwise ops whose slope does not change under a small move of the input (one tensor input).
_CONSTANT_SLOPE = frozenset(
    "relu relu6 leaky_relu hardtanh threshold clamp clamp_min clamp_max abs dropout alpha_dropout floor ceil round "
    "trunc sign hardshrink softshrink hardsigmoid maximum minimum fmax fmin frac".split())


def _times_constant_slope(node, g) -> tuple:
    from scriptc.tensors import wrap

    ones = np.ones(g._data.shape, dtype=g._data.dtype)
    slopes = _array_gradient(node, [wrap(ones)])
    return tuple(None if s is None or isinstance(s, list) else g * wrap(s) for s in slopes)


# --- multilinear ops: linear in each tensor argument on its own ----------------------------

# Their arguments' gradients are linear in g and in every other argument, so the gradient's own
# gradient comes from the op and its first-order formula at substituted arguments.
_MULTILINEAR = {
    "einsum": ("tensors",), "dot": ("self", "tensor"), "inner": ("self", "other"), "mv": ("self", "vec"),
    "outer": ("self", "vec2"), "ger": ("self", "vec2"), "kron": ("self", "other"), "tensordot": ("a", "b"),
    "cross": ("self", "other"), "linalg_cross": ("self", "other"), "linalg_vecdot": ("x", "y"),
    "chain_matmul": ("matrices",), "linalg_multi_dot": ("tensors",),
}


def _argument_slots(op, args, names) -> list:
    """(argument index, list position or None) of every tensor among the named arguments."""
    slots = []
    for i in (op.arg_index[n] for n in names):
        if isinstance(args[i], list):
            slots.extend((i, j) for j in range(len(args[i])))
        else:
            slots.append((i, None))
    return slots


def _substituted(args, slot, value) -> list:
    args = [list(a) if isinstance(a, list) else a for a in args]
    i, j = slot
    if j is None:
        args[i] = value
    else:
        args[i][j] = value
    return args


class _MultilinearBackward:
    """The op-like record of a multilinear op's gradients: inputs (g, then the argument behind each
    output), outputs the gradient of each argument that has an edge (`targets`, slots)."""

    save = ()
    complex_aware = True

    def __init__(self, op, args, g, targets):
        self.op, self.args, self.g, self.targets = op, args, g, targets
        self.name = op.name + "_backward"

    def node_gradient(self, node, grads_out, create_graph: bool) -> tuple:
        if create_graph:
            arrays = self._gradients([None if g is None else g._data for g in grads_out])
            return _behind_stub(node, grads_out, arrays, f"derivative for aten::{self.name} is not implemented")
        return self._gradients(grads_out)

    def _gradients(self, ggs) -> tuple:
        from scriptc.autograd.array_flow import SavedContext, _gradient

        op, args, g = self.op, self.args, self.g
        g_grad = None
        arg_grads: list = [None] * len(self.targets)
        for slot, gg in zip(self.targets, ggs):
            if gg is None:
                continue
            varied = _substituted(args, slot, gg)
            along = run_kernel(op, np, varied)
            g_grad = along if g_grad is None else g_grad + along
            found = _gradient(op, SavedContext(op, varied, along, None, np), g)
            for k, other in enumerate(self.targets):
                i, j = other
                part = found[i] if j is None else found[i][j]
                if other != slot and part is not None:
                    arg_grads[k] = part if arg_grads[k] is None else arg_grads[k] + part
        return (g_grad, *arg_grads)


def _multilinear_gradient(node, g, names) -> tuple:
    from scriptc.tensors import wrap

    op, args = node.ctx.op, node.ctx.args
    arrays = _array_gradient(node, [g])
    slots = [slot for slot in _argument_slots(op, args, names)
             if (arrays[slot[0]] if slot[1] is None else arrays[slot[0]][slot[1]]) is not None]
    flat = [arrays[i] if j is None else arrays[i][j] for i, j in slots]
    tensors = [wrap(a) for a in flat]
    edges = [node.inputs[i] if j is None else node.inputs[i][j] for i, j in slots]
    sources = [g] + [None if e is None else _edge_tensor(e) for e in edges]
    if any(t is not None and t.requires_grad for t in sources):
        stub = record(_MultilinearBackward(op, args, g._data, slots), (), sources, tuple(flat), None, np)
        for k, t in enumerate(tensors):
            t.requires_grad, t.grad_fn, t._out_index = True, stub, k
    result: list = [[None] * len(a) if isinstance(a, list) else None for a in arrays]
    for (i, j), t in zip(slots, tensors):
        if j is None:
            result[i] = t
        else:
            result[i][j] = t
    return tuple(result)
