"""Fractional max pooling (Graham, 2014): windows of a fixed size whose starts follow a pseudo-random
sequence drawn from one uniform sample per (batch, channel, spatial dim), as torch computes them."""

from __future__ import annotations


from scriptc.types import TensorType, int64

from . import register
from .pooling import _scatter_to_input, _taps
from .rules import expand, is_known
from .schema import OPAQUE

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _starts(xp, samples, size, out, pool):
    """torch's interval sequence, computed in the samples' dtype: starts[i] = floor((i + u) a) - floor(u a)
    with a = (size - pool) / (out - 1), and the last window flush with the end."""
    dtype = samples.dtype
    alpha = dtype.type(size - pool) / dtype.type(out - 1) if out > 1 else dtype.type(0)
    steps = xp.arange(out - 1, dtype=dtype)
    offset = xp.trunc(samples * alpha).astype(xp.int64)[..., None]
    first = xp.trunc((steps + samples[..., None]) * alpha).astype(xp.int64) - offset
    last = xp.full(samples.shape + (1,), size - pool, dtype=xp.int64)
    return xp.concatenate([first, last], axis=-1) if out > 0 else last[..., :0]


def _check(x, kernel, out, samples, spatial, name):
    prefix = f"fractional_max_pool{spatial}d" + ("_out" if spatial == 3 else "")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{prefix}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but got: {list(x.shape)}")
    for d in range(1, x.ndim):
        if x.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(x.shape)} with dimension {d} being empty.")
    for dim_name, size, o, k in zip(_DIM_NAMES[spatial], x.shape[-spatial:], out, kernel):
        # torch allows the last window to end on the last element in 2-D, not in 3-D
        if o + k - 1 > size or (spatial == 3 and o + k - 1 == size):
            raise RuntimeError(f"{prefix}(): pool {dim_name} {k} too large relative to input {dim_name} {size}")
    batch = x.shape[0] if x.ndim == spatial + 2 else 1
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[-spatial - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != spatial:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {spatial}; got {samples.shape[2]}.")
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")


def _fractional_max_pool(xp, x, kernel_size, output_size, samples, spatial):
    """(values, flat input indices): per (batch, channel), the max of each window, the first maximum in
    row-major order winning (a NaN wins, as in torch)."""
    name = f"fractional_max_pool{spatial}d"
    kernel, out = expand(kernel_size, spatial), expand(output_size, spatial)
    _check(x, kernel, out, samples, spatial, name)
    batched = x if x.ndim == spatial + 2 else x[None]
    sizes = batched.shape[2:]
    n, c = batched.shape[:2]
    # sample d of a plane drives spatial dim d in 3-D; in 2-D sample 0 drives the width, sample 1 the height
    order = range(spatial) if spatial == 3 else (1, 0)
    starts = [_starts(xp, samples[:n, :, s], size, o, k) for s, size, o, k in zip(order, sizes, out, kernel)]
    grids = []
    for d, begin in enumerate(starts):
        shape = [n, c] + [1] * spatial
        shape[2 + d] = out[d]
        grids.append(begin.reshape(shape))
    planes = xp.arange(n * c).reshape((n, c) + (1,) * spatial)
    flat_input = batched.reshape((n * c, -1))
    best = chosen = None
    for tap in _taps(kernel):
        positions = grids[0] + tap[0]
        for d in range(1, spatial):
            positions = positions * sizes[d] + grids[d] + tap[d]
        values = flat_input[planes, positions]
        if best is None:
            best, chosen = values.copy(), xp.broadcast_to(positions, values.shape).copy()
            continue
        take = (values > best) | ((values != values) & (best == best))
        xp.copyto(best, values, where=take)
        xp.copyto(chosen, xp.broadcast_to(positions, values.shape), where=take)
    if batched is not x:
        return best[0], chosen[0]
    return best, chosen


def _rule(x, kernel_size, output_size, samples, spatial):
    if x.shape is None or not is_known(output_size):
        return TensorType(x.dtype, None, x.device)
    return TensorType(x.dtype, tuple(x.shape[:-spatial]) + tuple(expand(output_size, spatial)), x.device)


def _fractional_ops(spatial):
    name = f"fractional_max_pool{spatial}d"

    def pooled(xp, x, kernel_size, output_size, random_samples):
        return _fractional_max_pool(xp, x, kernel_size, output_size, random_samples, spatial)

    def grad(ctx, g):
        return (_scatter_to_input(ctx.xp, g[0], ctx.out[1], ctx.input.shape, spatial), None, None, None)

    def rule(x, kernel_size, output_size, samples):
        values = _rule(x, kernel_size, output_size, samples, spatial)
        return values, TensorType(int64, values.shape, x.device)

    register(f"{name}(input: Tensor, kernel_size: int[], output_size: int[], random_samples: Tensor) "
             "-> (Tensor, Tensor)", OPAQUE, pooled, shape=rule, grad=grad, method=False, function=False,
             nondifferentiable_outputs=(1,),
             doc=f"Fractional max pooling of the last {spatial} dims to output_size with kernel_size windows "
                 "placed by random_samples (batch, channels, " + str(spatial) + "), uniform in [0, 1); and the flat "
                 "input index of each output's element.")


_fractional_ops(2)
_fractional_ops(3)
