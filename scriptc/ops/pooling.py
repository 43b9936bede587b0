"""Pooling ops over 1, 2 or 3 spatial dims: max (with indices), average, adaptive average and max,
and max_unpool.

Fixed-window pools visit the kernel's taps, one strided slice of the padded input each, so the
Python loop runs over taps, never elements. Max pools keep, per output, the flat index of the
chosen input element (torch's `indices`); their gradient adds g at those indices (a bincount).
Adaptive pools work one dim at a time: a box average or max is separable.
"""

from __future__ import annotations

import itertools
import math

from scriptc.types import TensorType, int64

from . import register
from .rules import conv_out, expand, is_known
from .schema import OPAQUE


def _rank_error(name, spatial, x):
    if spatial == 1:
        return RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
                            f"but got:{list(x.shape)}")
    return RuntimeError(f"non-empty {spatial + 1}D or {spatial + 2}D (batch mode) tensor expected for input")


def _window_arguments(kernel_size, stride, padding, dilation, spatial):
    """kernel, stride, padding and dilation as `spatial`-tuples; no stride (None or []) is the kernel's."""
    kernel = expand(kernel_size, spatial, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        expand(stride, spatial, "stride")
    return kernel, stride, expand(padding, spatial), expand(dilation, spatial, "dilation")


def window_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, spatial, name):
    """(kernel, stride, padding, dilation, output sizes, extra padding after) of a pooling window of x
    (an array, or anything with ndim and shape), with the op's checks: what a backend's pooling loop needs."""
    if x.ndim not in (spatial + 1, spatial + 2):
        raise _rank_error(name, spatial, x)
    kernel, stride, padding, dilation = _window_arguments(kernel_size, stride, padding, dilation, spatial)
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got {_named(kernel, 'k')}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {_named(dilation, 'dilation')}")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            if name == "max_pool1d":
                raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} "
                                   f"and kernel_size={k}")
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    sizes = x.shape[-spatial:]
    out = tuple(conv_out(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation))
    if any(o <= 0 for o in out) and name == "max_pool1d":
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out[0]}")
    if any(o <= 0 for o in out):
        channels = x.shape[-spatial - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (channels,) + tuple(sizes)))}). Calculated output "
                           f"size: ({'x'.join(map(str, (channels,) + out))}). Output size is too small")
    extra = tuple(max((o - 1) * s + d * (k - 1) + 1 - (n + 2 * p), 0)
                  for o, s, d, k, n, p in zip(out, stride, dilation, kernel, sizes, padding))
    return kernel, stride, padding, dilation, out, extra


def _named(values, prefix):
    names = {1: ("W",), 2: ("H", "W"), 3: ("T", "H", "W")}[len(values)]
    return " ".join(f"{prefix}{n}: {v}" for n, v in zip(names, values))


def _batched(x, spatial):
    return x if x.ndim == spatial + 2 else x[None]


def _padded(xp, x, padding, extra, fill):
    widths = ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(padding, extra))
    if not any(p or e for p, e in zip(padding, extra)):
        return x
    return xp.pad(x, widths, constant_values=fill)


def _taps(kernel):
    return list(itertools.product(*(range(k) for k in kernel)))


def _window(tap, stride, dilation, out):
    """The strided slices of the padded input that tap `tap` reads for every output position."""
    return (slice(None), slice(None)) + tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                                              for t, d, s, o in zip(tap, dilation, stride, out))


def _flat_positions(xp, taps, chosen, stride, padding, dilation, out, sizes):
    """Flat index into the (unpadded) input of the tap chosen at each output position."""
    offsets = xp.asarray(taps, dtype=xp.int64)[chosen]           # (*batch, *out, spatial)
    flat = xp.zeros(chosen.shape, dtype=xp.int64)
    spatial = len(out)
    for d in range(spatial):
        start = (xp.arange(out[d]) * stride[d] - padding[d]).reshape((-1,) + (1,) * (spatial - 1 - d))
        flat = flat * sizes[d] + start + offsets[..., d] * dilation[d]
    return flat


# --- max pooling --------------------------------------------------------------

def _max_pool(xp, x, kernel_size, stride, padding, dilation, ceil_mode, spatial, name):
    """(values, flat input indices) of a max pool, unbatched inputs as given."""
    kernel, stride, padding, dilation, out, extra = window_geometry(x, kernel_size, stride, padding, dilation,
                                                                    ceil_mode, spatial, name)
    batched = _batched(x, spatial)
    fill = -xp.inf if x.dtype.kind == "f" else xp.iinfo(x.dtype).min
    source = _padded(xp, batched, padding, extra, fill)
    taps = _taps(kernel)
    best = chosen = None
    for i, tap in enumerate(taps):
        values = source[_window(tap, stride, dilation, out)]
        if best is None:
            best, chosen = values.copy(), xp.zeros(values.shape, dtype=xp.int64)
            continue
        take = (values > best) | (values != values)  # a NaN wins, as in torch
        xp.copyto(best, values, where=take)
        chosen[take] = i
    indices = _flat_positions(xp, taps, chosen, stride, padding, dilation, out, batched.shape[2:])
    if batched is not x:
        return best[0], indices[0]
    return best, indices


def _scatter_to_input(xp, g, indices, input_shape, spatial):
    """d input: each output's gradient added at the flat input index it came from."""
    lead = math.prod(input_shape[:-spatial])
    plane = math.prod(input_shape[-spatial:])
    rows = xp.arange(lead, dtype=xp.int64).reshape((-1,) + (1,) * spatial)
    flat = (rows * plane + indices.reshape((lead,) + indices.shape[-spatial:])).reshape(-1)
    summed = xp.bincount(flat, weights=g.reshape(-1).astype(xp.float64), minlength=lead * plane)
    return summed.astype(g.dtype).reshape(input_shape)


def _max_pool_ops(spatial):
    name = f"max_pool{spatial}d"

    def pooled(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return _max_pool(xp, x, kernel_size, stride, padding, dilation, ceil_mode, spatial, name)

    def grad(ctx, g):
        g_values = g[0] if isinstance(g, tuple) else g
        indices = ctx.out[1] if isinstance(ctx.out, tuple) else ctx.aux
        return (_scatter_to_input(ctx.xp, g_values, indices, ctx.input.shape, spatial),) + (None,) * 5

    def rule(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return _pool_rule(x, kernel_size, stride, padding, dilation, ceil_mode, spatial)

    ones, zeros = [1] * spatial, [0] * spatial
    args = (f"input: Tensor, kernel_size: int[], stride: int[]? = None, padding: int[] = {zeros}, "
            f"dilation: int[] = {ones}, ceil_mode: bool = False")
    register(f"{name}({args}) -> Tensor", OPAQUE, pooled, shape=rule, grad=grad, aux=True, method=False,
             functional=True, keeps_layout=True, doc=f"The largest value of each {spatial}-D window.")
    register(f"{name}_with_indices({args}) -> (Tensor, Tensor)", OPAQUE, pooled,
             shape=lambda *a: (rule(*a), TensorType(int64, rule(*a).shape, a[0].device)), grad=grad,
             method=False, function=False, keeps_layout=True,
             doc=f"{name} and, per output, the flat index of its element within the input's spatial dims.")


def _pool_rule(x, kernel_size, stride, padding, dilation, ceil_mode, spatial):
    if x.shape is None or not all(map(is_known, (kernel_size, stride, padding, dilation))):
        return TensorType(x.dtype, None, x.device)
    kernel, stride, padding, dilation = _window_arguments(kernel_size, stride, padding, dilation, spatial)
    out = tuple(conv_out(n, k, s, p, d, bool(ceil_mode)) for n, k, s, p, d in
                zip(x.shape[-spatial:], kernel, stride, padding, dilation))
    return TensorType(x.dtype, tuple(x.shape[:-spatial]) + out, x.device)


# --- average pooling --------------------------------------------------------------

def _divisor_1d(xp, size, kernel, stride, padding, out, include_pad):
    """Per output position along one dim, how many elements its window averages (torch's rule)."""
    starts = xp.arange(out) * stride - padding
    ends = xp.minimum(starts + kernel, size + padding)
    if include_pad:
        return ends - starts
    return xp.minimum(ends, size) - xp.maximum(starts, 0)


def _avg_parts(xp, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, spatial, name):
    kernel, stride, padding, _, out, extra = window_geometry(x, kernel_size, stride, padding, 1, ceil_mode, spatial,
                                                             name)
    divisor = average_divisors(xp, x.shape, kernel, stride, padding, out, count_include_pad, divisor_override)
    return kernel, stride, padding, out, extra, divisor.astype(x.dtype, copy=False)


def average_divisors(xp, shape, kernel, stride, padding, out, count_include_pad, divisor_override):
    """What each output of an average pool divides by (float64, the output's spatial shape), torch's
    rule: the window's size, clipped to the padded input (or to the input without count_include_pad)."""
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        return xp.full(tuple(out), float(divisor_override))
    spatial = len(kernel)
    divisor = xp.ones(tuple(out))
    for d, (n, k, s, p, o) in enumerate(zip(shape[-spatial:], kernel, stride, padding, out)):
        counts = _divisor_1d(xp, n, k, s, p, o, count_include_pad).astype(xp.float64)
        divisor = divisor * counts.reshape((-1,) + (1,) * (spatial - 1 - d))
    return divisor


def _avg_pool_op(spatial):
    name = f"avg_pool{spatial}d"

    def kernel_fn(xp, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
        kernel, stride, padding, out, extra, divisor = _avg_parts(
            xp, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, spatial, name)
        source = _padded(xp, _batched(x, spatial), padding, extra, 0)
        total = None
        for tap in _taps(kernel):
            values = source[_window(tap, stride, (1,) * spatial, out)]
            total = values.copy() if total is None else total + values
        result = (total / divisor).astype(x.dtype, copy=False)
        return result if x.ndim == spatial + 2 else result[0]

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.input
        kernel, stride, padding, out, extra, divisor = _avg_parts(
            xp, x, ctx.kernel_size, ctx.stride, ctx.padding, ctx.ceil_mode, ctx.count_include_pad,
            ctx.divisor_override if spatial > 1 else None, spatial, name)
        batched = _batched(x, spatial)
        share = _batched(g, spatial) / divisor
        padded_shape = batched.shape[:2] + tuple(n + 2 * p + e for n, p, e in
                                                 zip(batched.shape[2:], padding, extra))
        back = xp.zeros(padded_shape, dtype=g.dtype)
        for tap in _taps(kernel):
            back[_window(tap, stride, (1,) * spatial, out)] += share
        inner = (slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(padding, batched.shape[2:]))
        gx = back[inner]
        return ((gx if x.ndim == spatial + 2 else gx[0]),) + (None,) * (6 if spatial > 1 else 5)

    zeros = [0] * spatial
    divisor = ", divisor_override: int? = None" if spatial > 1 else ""
    register(f"{name}(input: Tensor, kernel_size: int[], stride: int[]? = None, padding: int[] = {zeros}, "
             f"ceil_mode: bool = False, count_include_pad: bool = True{divisor}) -> Tensor", OPAQUE, kernel_fn,
             shape=lambda x, k, s=None, p=0, ceil_mode=False, *rest: _pool_rule(x, k, s, p, 1, ceil_mode, spatial),
             grad=grad, method=False, functional=True, keeps_layout=True,
             doc=f"The mean of each {spatial}-D window.")


# --- adaptive pooling ---------------------------------------------------------------

def _adaptive_check(x, output_size, spatial, name):
    if x.ndim not in (spatial + 1, spatial + 2):
        if spatial == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {name})")
        got = ": " if name.startswith("adaptive_max") else " "
        raise RuntimeError(f"{name}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but got{got}{list(x.shape)}")
    sizes = expand(output_size, spatial, "output_size")
    out = tuple(n if o is None else o for o, n in zip(sizes, x.shape[-spatial:]))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, out))}}}")
    return out


def _bounds(size, out):
    """Window i of adaptive pooling: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _averaging_matrix(xp, size, out, dtype):
    m = xp.zeros((out, size), dtype=dtype)
    for i, (start, end) in enumerate(_bounds(size, out)):
        m[i, start:end] = 1.0 / (end - start)
    return m


def _along(xp, x, axis, matrix):
    """matrix applied along one axis: y[..., i, ...] = sum_j matrix[i, j] x[..., j, ...]."""
    return xp.moveaxis(xp.moveaxis(x, axis, -1) @ matrix.T, -1, axis)


def _adaptive_avg_op(spatial):
    name = f"adaptive_avg_pool{spatial}d"

    def kernel_fn(xp, x, output_size):
        out = _adaptive_check(x, output_size, spatial, name)
        if all(o == 1 for o in out):
            return x.mean(axis=tuple(range(-spatial, 0)), keepdims=True)
        for axis, (n, o) in enumerate(zip(x.shape[-spatial:], out), start=x.ndim - spatial):
            if n != o:
                x = _along(xp, x, axis, _averaging_matrix(xp, n, o, x.dtype))
        return xp.ascontiguousarray(x)

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.input
        out = _adaptive_check(x, ctx.output_size, spatial, name)
        for axis, (n, o) in enumerate(zip(x.shape[-spatial:], out), start=x.ndim - spatial):
            if n != o:
                g = _along(xp, g, axis, _averaging_matrix(xp, n, o, g.dtype).T)
        return g, None

    register(f"{name}(input: Tensor, output_size: int[]) -> Tensor", OPAQUE, kernel_fn,
             shape=lambda x, size: _adaptive_rule(x, size, spatial), grad=grad, method=False, functional=True,
             keeps_layout=True, doc=f"Average pooling to a given {spatial}-D output size.")


def _adaptive_rule(x, output_size, spatial):
    if x.shape is None or not is_known(output_size):
        return TensorType(x.dtype, None, x.device)
    sizes = expand(output_size, spatial)
    return TensorType(x.dtype, tuple(x.shape[:-spatial]) + tuple(n if o is None else o for o, n in
                                                                 zip(sizes, x.shape[-spatial:])), x.device)


def _adaptive_max(xp, x, output_size, spatial, name):
    """(values, flat input indices): the max of each adaptive window, one spatial dim at a time."""
    out = _adaptive_check(x, output_size, spatial, name)
    values, chosen = x, []   # chosen[d]: per element of `values`, its input position along spatial dim d
    for d, (n, o) in enumerate(zip(x.shape[-spatial:], out)):
        axis = x.ndim - spatial + d
        parts, picks = [], []
        for start, end in _bounds(n, o):
            segment = xp.take(values, xp.arange(start, end), axis=axis)
            pick = xp.argmax(segment, axis=axis, keepdims=True)
            parts.append(xp.take_along_axis(segment, pick, axis=axis))
            picks.append(pick + start)
        position = xp.concatenate(picks, axis=axis)
        chosen = [xp.take_along_axis(c, position, axis=axis) for c in chosen] + [position]
        values = xp.concatenate(parts, axis=axis)
    flat = xp.zeros(values.shape, dtype=xp.int64)
    for n, position in zip(x.shape[-spatial:], chosen):
        flat = flat * n + position
    return values, flat


def _adaptive_max_ops(spatial):
    name = f"adaptive_max_pool{spatial}d"

    def pooled(xp, x, output_size):
        return _adaptive_max(xp, x, output_size, spatial, name)

    def grad(ctx, g):
        g_values = g[0] if isinstance(g, tuple) else g
        indices = ctx.out[1] if isinstance(ctx.out, tuple) else ctx.aux
        return _scatter_to_input(ctx.xp, g_values, indices, ctx.input.shape, spatial), None

    register(f"{name}(input: Tensor, output_size: int[]) -> Tensor", OPAQUE, pooled,
             shape=lambda x, size: _adaptive_rule(x, size, spatial), grad=grad, aux=True, method=False,
             functional=True, keeps_layout=True, doc=f"Max pooling to a given {spatial}-D output size.")
    register(f"{name}_with_indices(input: Tensor, output_size: int[]) -> (Tensor, Tensor)", OPAQUE, pooled,
             shape=lambda x, size: (_adaptive_rule(x, size, spatial),
                                    TensorType(int64, _adaptive_rule(x, size, spatial).shape, x.device)),
             grad=grad, method=False, function=False, keeps_layout=True,
             doc=f"{name} and the flat index of each output's element within the input's spatial dims.")


# --- max_unpool ----------------------------------------------------------------------

def _unpool_op(spatial):
    name = f"max_unpool{spatial}d"

    def kernel_fn(xp, x, indices, output_size):
        if indices.dtype.kind not in "iu" or indices.dtype.itemsize != 8:
            raise RuntimeError(f"elements in indices should be type int64 but got: {_type_name(indices.dtype)}")
        if indices.shape != x.shape:
            raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                               f"({list(x.shape)}) but got indices tensor with shape: {list(indices.shape)}")
        sizes = tuple(output_size)[-spatial:]
        plane = math.prod(sizes)
        if indices.size and (indices.min() < 0 or indices.max() >= plane):
            bad = int(indices.max() if indices.max() >= plane else indices.min())
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(map(str, sizes))})")
        lead = x.shape[:-spatial]
        out = xp.zeros((math.prod(lead), plane), dtype=x.dtype)
        xp.put_along_axis(out, indices.reshape(out.shape[0], -1), x.reshape(out.shape[0], -1), axis=1)
        return out.reshape(lead + sizes)

    def grad(ctx, g):
        x = ctx.input
        lead = math.prod(x.shape[:-spatial])
        picked = ctx.xp.take_along_axis(g.reshape(lead, -1), ctx.indices.reshape(lead, -1), axis=1)
        return picked.reshape(x.shape), None, None

    register(f"{name}(input: Tensor, indices: Tensor, output_size: int[]) -> Tensor", OPAQUE, kernel_fn,
             shape=lambda x, i, size: TensorType(x.dtype, None if x.shape is None or not is_known(size) else
                                                 tuple(x.shape[:-spatial]) + tuple(size)[-spatial:], x.device),
             grad=grad, save=("indices",), method=False, functional=True,
             doc="The inverse of a max pool: each value written at its index in a zero output.")


def _type_name(dtype):
    return {"float32": "Float", "float64": "Double", "int32": "Int", "int16": "Short"}.get(dtype.name, dtype.name)


for _spatial in (1, 2, 3):
    _max_pool_ops(_spatial)
    _avg_pool_op(_spatial)
    _adaptive_avg_op(_spatial)
    _adaptive_max_ops(_spatial)
    _unpool_op(_spatial)
