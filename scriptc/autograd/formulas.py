"""Differentiable gradient formulas: each op's gradient written with Tensor ops, for create_graph.

`FORMULAS[op name](ctx, g)` returns one gradient per schema argument (None where there is none),
or None as a whole where the call's variant has no formula here (div with a rounding_mode, say) and
the engine falls back. `ctx` is a graph_formulas.GraphContext: the arguments by schema name, as
Tensors wired into the graph, and `out`. A few ops are differentiated through their composite
(cross_entropy as log_softmax + nll_loss, layer_norm and batch_norm from means and variances).
"""

from __future__ import annotations

import math

from scriptc import ops as _ops


def table_op(name: str, *args):
    """Call a table op through eager dispatch (recorded when grad is on), arguments in schema order."""
    from scriptc.tensors import call

    op = _ops.OPS[name]
    return call(op, tuple(args) + tuple(a.default for a in op.schema.args[len(args):]))


def _is_tensor(value) -> bool:
    from scriptc.tensors import Tensor

    return isinstance(value, Tensor)


def _where(condition, a, b):
    return table_op("where", condition, a, b)


def _unit_where_zero(t):
    """t with its zeros replaced by ones: a denominator or log argument safe to differentiate."""
    return _where(t == 0, 1.0, t)


def _mul(c, g):
    a, b = c.self, c.other
    return (g * b, g * a if _is_tensor(b) else None)


def _div(c, g):
    if c.rounding_mode is not None:
        return None
    a, b = c.self, c.other
    ga = g / b
    return (ga if _is_tensor(a) else None, -ga * a / b if _is_tensor(b) else None)


def _pow(c, g):
    base, exponent = c.self, c.exponent
    if not _is_tensor(base):
        return (None, g * c.out * math.log(base))
    if not _is_tensor(exponent):
        return ((g * 0.0 if exponent == 0 else g * exponent * base ** (exponent - 1)), None)
    return (g * exponent * base ** (exponent - 1), g * c.out * _unit_where_zero(base).log())


def _linear(c, g):
    x, w, b = c.input, c.weight, c.bias
    if w.dim() != 2:
        return None
    out_features, in_features = w.shape
    rows, x_rows = g.reshape(-1, out_features), x.reshape(-1, in_features)
    return (g.matmul(w), rows.t().matmul(x_rows), rows.sum(0) if _is_tensor(b) else None)


def _matmul(c, g):
    a, b = c.self, c.other
    left = a if a.dim() > 1 else a.unsqueeze(0)
    right = b if b.dim() > 1 else b.unsqueeze(-1)
    if a.dim() == 1:
        g = g.unsqueeze(-2)
    if b.dim() == 1:
        g = g.unsqueeze(-1)
    ga, gb = g.matmul(right.transpose(-2, -1)), left.transpose(-2, -1).matmul(g)
    return (ga.squeeze(-2) if a.dim() == 1 else ga, gb.squeeze(-1) if b.dim() == 1 else gb)


def _mm(c, g):
    a, b = c.self, c.mat2
    return (g.matmul(b.transpose(-2, -1)), a.transpose(-2, -1).matmul(g))


def _addmm(c, g):
    m1, m2 = c.mat1, c.mat2
    return (g * c.beta, g.matmul(m2.t()) * c.alpha, m1.t().matmul(g) * c.alpha, None, None)


def _pair(value) -> list:
    return [value, value] if isinstance(value, int) else list(value)


def _convolution(gradients):
    """A convolution's formula from gradients(c, x, g) -> (input grad, weight grad) on a batch (or None):
    the unbatched form and the bias gradient added."""
    def formula(c, g):
        x = c.input
        unbatched = x.dim() == 3
        if unbatched:
            x, g = x.unsqueeze(0), g.unsqueeze(0)
        found = gradients(c, x, g)
        if found is None:
            return None
        gx, gw = found
        gb = g.sum([0, 2, 3]) if _is_tensor(c.bias) else None
        return (gx.squeeze(0) if unbatched else gx, gw, gb) + (None,) * 5
    return formula


@_convolution
def _conv2d(c, x, g):
    w, padding, dilation = c.weight, c.padding, _pair(c.dilation)
    if isinstance(padding, str):
        if padding == "same" and any(d * (k - 1) % 2 for d, k in zip(dilation, w.shape[2:])):
            return None  # torch pads one side more: no symmetric im2col padding expresses it
        padding = [d * (k - 1) // 2 for d, k in zip(dilation, w.shape[2:])] if padding == "same" else [0, 0]
    n, channels, height, width = x.shape
    out_channels, group_channels, kh, kw = w.shape
    groups = c.groups
    geometry = ([kh, kw], dilation, _pair(padding), _pair(c.stride))
    cols = table_op("im2col", x, *geometry)
    positions = cols.shape[-1]
    g_rows = g.reshape(n, groups, out_channels // groups, positions)
    w_rows = w.reshape(groups, out_channels // groups, group_channels * kh * kw)
    g_cols = w_rows.transpose(-2, -1).matmul(g_rows).reshape(n, channels * kh * kw, positions)
    gx = table_op("col2im", g_cols, [height, width], *geometry)
    gw = g_rows.matmul(cols.reshape(n, groups, group_channels * kh * kw, positions).transpose(-2, -1))
    return gx, gw.sum(0).reshape(w.shape)


@_convolution
def _conv_transpose2d(c, x, g):
    w = c.weight
    n, in_channels, height, width = x.shape
    _, group_out, kh, kw = w.shape
    groups = c.groups
    # The transposed convolution scatters w^T x into the output: its gradients gather g back with im2col.
    cols = table_op("im2col", g, [kh, kw], _pair(c.dilation), _pair(c.padding), _pair(c.stride))
    if cols.shape[-1] != height * width:
        return None
    cols = cols.reshape(n, groups, group_out * kh * kw, height * width)
    x_rows = x.reshape(n, groups, in_channels // groups, height * width)
    w_rows = w.reshape(groups, in_channels // groups, group_out * kh * kw)
    gx = w_rows.matmul(cols).reshape(x.shape)
    return gx, x_rows.matmul(cols.transpose(-2, -1)).sum(0).reshape(w.shape)


def _first(value) -> int:
    return value if isinstance(value, int) else value[0]


def _as_rows(x, op_2d: str, *args):
    """A 1-d op as its 2-d form over rows of height 1 (an unbatched input gets a batch of one)."""
    batched = x if x.dim() == 3 else x.unsqueeze(0)
    out = table_op(op_2d, batched.unsqueeze(2), *args).squeeze(2)
    return out if x.dim() == 3 else out.squeeze(0)


def _conv1d(c, g):
    padding = c.padding if isinstance(c.padding, str) else [0, _first(c.padding)]

    def composite(x, weight, bias):
        return _as_rows(x, "conv2d", weight.unsqueeze(2), bias, [1, _first(c.stride)], padding,
                        [1, _first(c.dilation)], c.groups)
    return _through_composite(c, g, ("input", "weight", "bias"), composite)


def _max_pool1d(c, g):
    stride = c.stride if not c.stride else [1, _first(c.stride)]

    def composite(x):
        return _as_rows(x, "max_pool2d", [1, _first(c.kernel_size)], stride, [0, _first(c.padding)],
                        [1, _first(c.dilation)], c.ceil_mode)
    return _through_composite(c, g, ("input",), composite)


def _max_pool2d(c, g):
    x = c.input
    _, indices = table_op("max_pool2d_with_indices", x.detach(), c.kernel_size, c.stride, c.padding, c.dilation,
                          c.ceil_mode)
    planes = x.reshape(*x.shape[:-2], -1)
    flat = table_op("scatter_add", planes.new_zeros(planes.shape), -1, indices.flatten(-2), g.flatten(-2))
    return (flat.reshape(x.shape),) + (None,) * 5


def _reduced(loss_grad, reduction: str, numel: int):
    return loss_grad / numel if reduction == "mean" else loss_grad


def _mse_loss(c, g):
    diff = c.input - c.target
    grad = _reduced(2.0 * diff * g, c.reduction, diff.numel())
    return (grad, -grad, None)


def _binary_cross_entropy(c, g):
    x, y, w = c.input, c.target, c.weight
    gx = g * (x - y) / table_op("clamp", (1 - x) * x, 1e-12, None)
    gy = g * (table_op("clamp", (1 - x).log(), -100, None) - table_op("clamp", x.log(), -100, None))
    if _is_tensor(w):
        gx, gy = gx * w, gy * w
    return (_reduced(gx, c.reduction, x.numel()), _reduced(gy, c.reduction, x.numel()), None, None)


def _through_composite(c, g, names: tuple, build):
    """Gradients of `build(*arguments)` (the op written with other ops), differentiated with history."""
    from scriptc.autograd.engine import grad

    # Aliases, so the inner grad() stops at them: the hooks and retained grads of the tensors
    # themselves belong to the outer backward, which reaches them once with the whole gradient.
    values = [v.view_as(v) if _is_tensor(v) and v.requires_grad else v for v in (getattr(c, n) for n in names)]
    wanted = [(n, v) for n, v in zip(names, values) if _is_tensor(v) and v.requires_grad]
    result = [None] * len(c.node.ctx.op.schema.args)
    if not wanted:
        return tuple(result)
    out = build(*values)
    found = grad(out, [v for _, v in wanted], g, retain_graph=True, create_graph=True, allow_unused=True)
    for (name, _), gradient in zip(wanted, found):
        result[c.node.ctx.op.arg_index[name]] = gradient
    return tuple(result)


def _cross_entropy(c, g):
    if c.label_smoothing != 0 or c.target.is_floating_point():
        return None
    class_dim = 0 if c.input.dim() == 1 else 1

    def composite(x, weight):
        return table_op("nll_loss", table_op("log_softmax", x, class_dim, None), c.target, weight,
                        c.ignore_index, c.reduction)
    return _through_composite(c, g, ("input", "weight"), composite)


def _normalized(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    centred = x - mean
    return centred * ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()


def _layer_norm(c, g):
    dims = list(range(-len(c.normalized_shape), 0))

    def composite(x, weight, bias):
        y = _normalized(x, dims, c.eps)
        y = y * weight if _is_tensor(weight) else y
        return y + bias if _is_tensor(bias) else y
    return _through_composite(c, g, ("input", "weight", "bias"), composite)


def _batch_norm(c, g):
    def composite(x, weight, bias):
        shape = [1, -1] + [1] * (x.dim() - 2)
        if c.training or not _is_tensor(c.running_mean):
            y = _normalized(x, [0] + list(range(2, x.dim())), c.eps)
        else:
            y = (x - c.running_mean.reshape(shape)) * (c.running_var.reshape(shape) + c.eps).rsqrt()
        y = y * weight.reshape(shape) if _is_tensor(weight) else y
        return y + bias.reshape(shape) if _is_tensor(bias) else y
    return _through_composite(c, g, ("input", "weight", "bias"), composite)


def _group_norm(c, g):
    def composite(x, weight, bias):
        shape = [1, -1] + [1] * (x.dim() - 2)
        y = _normalized(x.reshape(x.shape[0], c.num_groups, -1), [2], c.eps).reshape(x.shape)
        y = y * weight.reshape(shape) if _is_tensor(weight) else y
        return y + bias.reshape(shape) if _is_tensor(bias) else y
    return _through_composite(c, g, ("input", "weight", "bias"), composite)


def _instance_norm(c, g):
    if not c.use_input_stats:
        return None

    def composite(x, weight, bias):
        shape = [1, -1] + [1] * (x.dim() - 2)
        y = _normalized(x, list(range(2, x.dim())), c.eps)
        y = y * weight.reshape(shape) if _is_tensor(weight) else y
        return y + bias.reshape(shape) if _is_tensor(bias) else y
    return _through_composite(c, g, ("input", "weight", "bias"), composite)


def _composite_of_self(build):
    """The formula of a pointwise op written as build(x) with differentiable ops."""
    def formula(c, g):
        return _through_composite(c, g, ("self",), build)
    return formula


def _prelu(c, g):
    def composite(x, weight):
        w = weight.reshape([1, -1] + [1] * (x.dim() - 2)) if weight.numel() > 1 and x.dim() > 1 else weight
        return _where(x > 0, x, w * x)
    return _through_composite(c, g, ("self", "weight"), composite)


def _logsumexp(c, g):
    x, out = c.self, c.out
    if not c.keepdim:
        for d in sorted(d % x.dim() for d in ([c.dim] if isinstance(c.dim, int) else c.dim)):
            out, g = out.unsqueeze(d), g.unsqueeze(d)
    return (g * (x - out).exp(), None, None)


def _vector_norm(order_name: str):
    def formula(c, g):
        x, out, order = c.self, c.out, getattr(c, order_name)
        if c.dtype is not None or order not in (1, 2, "fro"):
            return None
        if order == 1:
            return (g * x.sign(),) + (None,) * 4
        if not c.keepdim and c.dim is not None:
            for d in sorted(d % x.dim() for d in ([c.dim] if isinstance(c.dim, int) else c.dim)):
                out, g = out.unsqueeze(d), g.unsqueeze(d)
        scale = g / _unit_where_zero(out) * (out != 0)
        return (x * scale,) + (None,) * 4
    return formula


def _gelu(c, g):
    if c.approximate != "none":
        return None
    x = c.self
    cdf = 0.5 * (1.0 + (x * (1 / math.sqrt(2.0))).erf())
    pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return (g * (cdf + x * pdf), None)


def _silu(c, g):
    s = c.self.sigmoid()
    return (g * s * (1 + c.self * (1 - s)),)


def _softplus(c, g):
    scaled = c.self * c.beta
    return (g * _where(scaled > c.threshold, 1.0, scaled.sigmoid()), None, None)


def _log_softmax(c, g):
    if c.dtype is not None:
        return None
    return (g - c.out.exp() * g.sum(c.dim, keepdim=True), None, None)


def _softmax(c, g):
    if c.dtype is not None:
        return None
    out = c.out
    return (out * (g - (g * out).sum(c.dim, keepdim=True)), None, None)


def _reduced_dims(x, dim) -> list:
    """The dims a reduction's `dim` argument names (all of them for None or [])."""
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return list(range(x.dim()))
    return sorted(d % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim))


def _kept(value, x, dims, keepdim: bool):
    """A reduction's result with its reduced dims back (as size 1), to broadcast against x."""
    if not keepdim:
        for d in dims:
            value = value.unsqueeze(d)
    return value


def _constant(array):
    from scriptc.tensors import wrap

    return wrap(array)


def _variance(x, dims, correction, keepdim: bool):
    centred = x - x.mean(dims, keepdim=True)
    count = math.prod(x.shape[d] for d in dims) if x.dim() else 1
    return (centred * centred).sum(dims, keepdim=keepdim) / (count - correction)


def _moments(with_sqrt: bool, with_mean: bool):
    """var / std / var_mean / std_mean written with differentiable ops."""
    def formula(c, g):
        correction = c.correction if c.correction is not None else (1 if c.unbiased else 0)

        def composite(x):
            dims = _reduced_dims(x, c.dim)
            spread = _variance(x, dims, correction, c.keepdim)
            spread = spread.sqrt() if with_sqrt else spread
            return (spread, x.mean(dims, keepdim=c.keepdim)) if with_mean else spread
        return _through_composite(c, g, ("self",), composite)
    return formula


def _extreme_of_all(c, g):
    """max() / min(): g shared evenly among the elements equal to the extreme (torch's rule for ties)."""
    x = c.self
    hits = _constant((x._data == c.out._data).astype(x._data.dtype))
    return (g * hits / float(hits._data.sum()),)


def _extreme_over_dims(c, g):
    """amax / amin over dims: g shared evenly among each slice's elements equal to its extreme."""
    x = c.self
    dims = _reduced_dims(x, c.dim)
    out = _kept(c.out, x, dims, c.keepdim)._data
    hits = (x._data == out).astype(x._data.dtype)
    share = _constant(hits / hits.sum(axis=tuple(dims), keepdims=True))
    return (_kept(g, x, dims, c.keepdim) * share, None, None)


def _extreme_along_dim(c, g):
    """max.dim / min.dim: the values' gradient to the position each index names."""
    import numpy as np

    x, dim = c.self, c.dim % max(c.self.dim(), 1)
    indices = c.out[1]._data if c.keepdim else np.expand_dims(c.out[1]._data, dim)
    positions = np.arange(x.shape[dim] if x.dim() else 1).reshape([-1 if d == dim else 1 for d in range(x.dim())])
    picked = _constant((positions == indices).astype(x._data.dtype))
    values_grad = g[0]
    return (_kept(values_grad, x, [dim], c.keepdim) * picked, None, None)


def _prod(c, g):
    """prod's gradient g * (the product of the other elements): out / x without zeros, else each element's
    product with itself replaced by 1 (an n x n expansion along the reduced dim)."""
    x = c.self
    if c.dtype is not None:
        return None
    dims = _reduced_dims(x, c.dim)
    kept_g = _kept(g, x, dims, c.keepdim)
    if not (x._data == 0).any():
        return (kept_g * _kept(c.out, x, dims, c.keepdim) / x, None, None, None)
    import numpy as np

    line = x.reshape(-1) if c.dim is None else x.movedim(dims[0], -1)
    n = line.shape[-1]
    expanded = line.unsqueeze(-2).expand(*line.shape[:-1], n, n)
    replaced = table_op("where", _constant(np.eye(n, dtype=bool)), 1.0, expanded)
    others = replaced.prod(-1)
    others = others.reshape(x.shape) if c.dim is None else others.movedim(-1, dims[0])
    return (kept_g * others, None, None, None)


def _embedding(c, g):
    """embedding's weight gradient: g's rows added at their indices (index_add, linear in g)."""
    import numpy as np

    weight, flat = c.weight, c.input.reshape(-1)
    rows = g.reshape(-1, weight.shape[-1])
    indices = flat._data
    if c.padding_idx is not None:
        rows = rows * _constant((indices != c.padding_idx % weight.shape[0]).astype(rows._data.dtype)[:, None])
    if c.scale_grad_by_freq:
        # torch's double backward (embedding_dense_double_backward) gathers without this scale: the scaled
        # rows' gradient flows through the unscaled ones, as there.
        frequency = np.bincount(indices, minlength=weight.shape[0])[indices].astype(rows._data.dtype)
        rows = rows + (rows * _constant(1 / frequency[:, None] - 1)).detach()
    zeros = _constant(np.zeros(weight.shape, dtype=rows._data.dtype))
    return (None, table_op("index_add", zeros, 0, flat.detach(), rows), None, None)


def _addmv(c, g):
    return (g * c.beta, table_op("outer", g, c.vec) * c.alpha, c.mat.t().matmul(g) * c.alpha, None, None)


def _baddbmm(c, g):
    b1, b2 = c.batch1, c.batch2
    return (g * c.beta, g.matmul(b2.transpose(-2, -1)) * c.alpha, b1.transpose(-2, -1).matmul(g) * c.alpha, None,
            None)


def _addbmm(c, g):
    b1, b2 = c.batch1, c.batch2
    batched = g.unsqueeze(0)
    return (g * c.beta, batched.matmul(b2.transpose(-2, -1)) * c.alpha, b1.transpose(-2, -1).matmul(batched) * c.alpha,
            None, None)


def _addr(c, g):
    return (g * c.beta, g.matmul(c.vec2) * c.alpha, g.t().matmul(c.vec1) * c.alpha, None, None)


def _picked_values(dim_of, keep_of=lambda c: True):
    """sort, topk, kthvalue, median.dim, mode, cummax, cummin: the values are x taken along dim at the
    returned indices (take_along_dim, a linear op), so that is what is differentiated."""
    def formula(c, g):
        x = c.self
        dim = dim_of(c) % max(x.dim(), 1)
        indices = c.out[1].detach()
        keep = keep_of(c)
        at = indices if keep else indices.unsqueeze(dim)

        def composite(source):
            values = table_op("take_along_dim", source, at, dim)
            return values if keep else values.squeeze(dim)
        return _through_composite(c, g[0], ("self",), composite)
    return formula


def _lstm_cell_state(c, g):
    def composite(ingate, forgetgate, cellgate, cx):
        return forgetgate.sigmoid() * cx + ingate.sigmoid() * cellgate.tanh()
    return _through_composite(c, g, ("ingate", "forgetgate", "cellgate", "cx"), composite)


def _lstm_cell_hidden(c, g):
    return _through_composite(c, g, ("outgate", "cy"), lambda outgate, cy: outgate.sigmoid() * cy.tanh())


def _gru_cell(c, g):
    def composite(input_r, input_z, input_n, hidden_r, hidden_z, hidden_n, hx):
        r, z = (input_r + hidden_r).sigmoid(), (input_z + hidden_z).sigmoid()
        n = (input_n + r * hidden_n).tanh()
        return n + z * (hx - n)
    return _through_composite(c, g, ("input_r", "input_z", "input_n", "hidden_r", "hidden_z", "hidden_n", "hx"),
                              composite)


FORMULAS = {
    "mul": _mul, "div": _div, "pow": _pow,
    "exp": lambda c, g: (g * c.out,),
    "log": lambda c, g: (g / c.self,),
    "sqrt": lambda c, g: (g / (2 * c.out),),
    "rsqrt": lambda c, g: (g * -0.5 * c.out * c.out * c.out,),
    "reciprocal": lambda c, g: (-g * c.out * c.out,),
    "square": lambda c, g: (2 * g * c.self,),
    "sin": lambda c, g: (g * c.self.cos(),),
    "cos": lambda c, g: (-g * c.self.sin(),),
    "tanh": lambda c, g: (g * (1 - c.out * c.out),),
    "sigmoid": lambda c, g: (g * c.out * (1 - c.out),),
    "log1p": lambda c, g: (g / (1 + c.self),),
    "expm1": lambda c, g: (g * (c.out + 1),),
    "elu": lambda c, g: (g * _where(c.self > 0, 1.0, c.out + c.alpha), None),
    "logsigmoid": lambda c, g: (g * (-c.self).sigmoid(),),
    "silu": _silu, "softplus": _softplus, "gelu": _gelu,
    "log_softmax": _log_softmax, "softmax": _softmax,
    "linear": _linear, "matmul": _matmul, "mm": _mm, "bmm": _mm, "addmm": _addmm, "conv2d": _conv2d,
    "mse_loss": _mse_loss, "binary_cross_entropy": _binary_cross_entropy, "cross_entropy": _cross_entropy,
    "layer_norm": _layer_norm, "batch_norm": _batch_norm, "group_norm": _group_norm,
    "instance_norm": _instance_norm, "conv_transpose2d": _conv_transpose2d, "max_pool2d": _max_pool2d,
    "hardswish": _composite_of_self(lambda x: x * table_op("hardsigmoid", x)),
    "mish": _composite_of_self(lambda x: x * table_op("softplus", x).tanh()),
    "softsign": _composite_of_self(lambda x: x / (1 + x.abs())),
    "prelu": _prelu, "logsumexp": _logsumexp,
    "linalg_vector_norm": _vector_norm("ord"), "norm": _vector_norm("p"),
    "var": _moments(False, False), "std": _moments(True, False), "var_mean": _moments(False, True),
    "std_mean": _moments(True, True), "max": _extreme_of_all, "min": _extreme_of_all, "amax": _extreme_over_dims,
    "amin": _extreme_over_dims, "max.dim": _extreme_along_dim, "min.dim": _extreme_along_dim, "prod": _prod,
    "embedding": _embedding, "_lstm_cell_state": _lstm_cell_state, "_lstm_cell_hidden": _lstm_cell_hidden,
    "_gru_cell": _gru_cell, "addmv": _addmv, "baddbmm": _baddbmm, "addbmm": _addbmm, "addr": _addr,
    "median": _extreme_of_all, "conv1d": _conv1d, "max_pool1d": _max_pool1d,
    "sort": _picked_values(lambda c: c.dim), "topk": _picked_values(lambda c: c.dim),
    "cummax": _picked_values(lambda c: c.dim), "cummin": _picked_values(lambda c: c.dim),
    "kthvalue": _picked_values(lambda c: c.dim, lambda c: c.keepdim),
    "median.dim": _picked_values(lambda c: c.dim, lambda c: c.keepdim),
    "mode": _picked_values(lambda c: c.dim, lambda c: c.keepdim),
    "softmin": lambda c, g: None if c.dtype is not None else _through_composite(
        c, g, ("self",), lambda x: table_op("softmax", -x, c.dim, None)),
    "glu": lambda c, g: _through_composite(c, g, ("self",), lambda x: _glu(x, c.dim)),
}


def _glu(x, dim):
    first, second = x.chunk(2, dim)
    return first * second.sigmoid()


from scriptc.autograd.pointwise_formulas import POINTWISE_FORMULAS  # noqa: E402  (they use the helpers above)

FORMULAS.update(POINTWISE_FORMULAS)
