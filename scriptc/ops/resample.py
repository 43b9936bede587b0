"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; antialiased
bilinear and bicubic),
grid_sample (bilinear, nearest, bicubic; zeros, border, reflection padding) and affine_grid.

interpolate is separable: along each spatial dim an output position reads a few input positions
(taps) with weights, computed the way torch computes them (in float32 for float32 inputs). The
forward gathers those taps; the gradient applies each dim's (output x input) weight matrix,
transposed. grid_sample reads, per output point, the 2^d (bilinear), 4^d (bicubic) or 1 (nearest)
input elements around its source coordinates; the input gradient adds back through the same taps
(a bincount) and the grid gradient is the interpolation's derivative times the unnormalization.
"""

from __future__ import annotations

import itertools
import math

from scriptc.errors import ArgumentError
from scriptc.types import TensorType

from . import alias, register
from .rules import is_known
from .schema import OPAQUE

MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_INTERPOLATING = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
CUBIC_A = -0.75


def _as_list(value, n):
    return list(value) if isinstance(value, (list, tuple)) else [value] * n


def _plan(x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias):
    """(output sizes, per-dim scale factors or None, align_corners) after torch's checks."""
    spatial = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ArgumentError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ArgumentError("either size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ArgumentError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = _as_list(size, spatial)
        if len(sizes) != spatial:
            raise ArgumentError(f"Input and output must have the same number of spatial dimensions, but got input "
                                f"with spatial dimensions of {list(x.shape[2:])} and output size of {size}. Please "
                                f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                f"...,oK) format.")
        scales = [None] * spatial
    else:
        factors = _as_list(scale_factor, spatial)
        if len(factors) != spatial:
            raise ArgumentError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                f"input with spatial dimensions of {list(x.shape[2:])} and scale_factor of shape "
                                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                f"scale_factor in (s1, s2, ...,sK) format.")
        sizes = [math.floor(float(n) * f) for n, f in zip(x.shape[2:], factors)]
        scales = [None] * spatial if recompute_scale_factor else [float(f) for f in factors]
    if align_corners is not None and mode not in _INTERPOLATING:
        raise ArgumentError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                            "bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ArgumentError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                            "4-D tensor as input")
    if x.ndim not in (3, 4, 5) or mode not in MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
                                  f"modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _INTERPOLATING and x.ndim != _INTERPOLATING[mode]:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_INTERPOLATING[mode]}D input")
    if any(o <= 0 for o in sizes) or any(n <= 0 for n in x.shape[2:]):
        names = ("D", "H", "W")[3 - spatial:]
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(f'{k}: {n}' for k, n in zip(names, x.shape[2:]))}) output "
                           f"({', '.join(f'{k}: {o}' for k, o in zip(names, sizes))})")
    return sizes, scales, bool(align_corners)


def _taps(xp, n_in, n_out, scale, mode, align_corners, real):
    """(input positions (out, T), weights (out, T)) of one dim; `real` is the dtype torch computes in."""
    dst = xp.arange(n_out).astype(real)
    if mode in ("nearest", "nearest-exact"):
        if n_out == n_in:
            return xp.arange(n_out)[:, None], xp.ones((n_out, 1), dtype=real)
        step = real(1.0 / scale if scale is not None and scale > 0 else n_in / n_out)
        offset = real(0.5) if mode == "nearest-exact" else real(0)
        source = xp.minimum(xp.floor((dst + offset) * step).astype(xp.int64), n_in - 1)
        if mode == "nearest" and n_out == 2 * n_in:
            source = xp.arange(n_out) // 2
        return source[:, None], xp.ones((n_out, 1), dtype=real)
    if mode == "area":
        starts = (xp.arange(n_out) * n_in) // n_out
        ends = -((-(xp.arange(n_out) + 1) * n_in) // n_out)
        width = int((ends - starts).max())
        positions = starts[:, None] + xp.arange(width)[None, :]
        inside = positions < ends[:, None]
        weights = xp.where(inside, 1.0 / (ends - starts)[:, None], 0).astype(real)
        return xp.minimum(positions, n_in - 1), weights
    if align_corners:
        step = real((n_in - 1) / (n_out - 1)) if n_out > 1 else real(0)
        source = step * dst
    else:
        step = real(1.0 / scale if scale is not None and scale > 0 else n_in / n_out)
        source = step * (dst + real(0.5)) - real(0.5)
    if mode == "bicubic":
        base = xp.floor(source)
        t = source - base
        base = base.astype(xp.int64)
        positions = xp.clip(base[:, None] + xp.arange(-1, 3)[None, :], 0, n_in - 1)
        return positions, xp.stack(_cubic_weights(t), axis=1)
    source = xp.maximum(source, real(0))
    low = xp.minimum(xp.floor(source).astype(xp.int64), n_in - 1)
    frac = xp.clip(source - low, 0, 1)
    high = low + (low < n_in - 1)
    return xp.stack([low, high], axis=1), xp.stack([1 - frac, frac], axis=1)


def _antialias_taps(xp, n_in, n_out, scale, mode, align_corners, real):
    """torch's antialiased taps (PIL's): when shrinking, the triangle (bilinear) or Keys cubic (A = -0.5,
    bicubic) filter is stretched by the scale, so every input position under it contributes; weights are
    normalized to sum to 1."""
    if align_corners:
        step = real((n_in - 1) / (n_out - 1)) if n_out > 1 else real(0)
    else:
        step = real(1.0 / scale if scale is not None and scale > 0 else n_in / n_out)
    half_width = 1 if mode == "bilinear" else 2
    stretch = step if step >= 1 else real(1)
    support = real(half_width) * stretch
    width = int(math.ceil(support)) * 2 + 1
    center = step * (xp.arange(n_out).astype(real) + real(0.5))
    low = xp.maximum(xp.trunc(center - support + real(0.5)).astype(xp.int64), 0)
    count = xp.clip(xp.minimum(xp.trunc(center + support + real(0.5)).astype(xp.int64), n_in) - low, 0, width)
    offsets = xp.arange(width)
    distance = xp.abs((offsets[None, :] + low[:, None] - center[:, None] + real(0.5)) / stretch).astype(real)
    if mode == "bilinear":
        weights = xp.maximum(real(0), real(1) - distance)
    else:
        a = real(-0.5)
        weights = xp.where(distance < 1, ((a + 2) * distance - (a + 3)) * distance * distance + 1,
                           xp.where(distance < 2, ((a * distance - 5 * a) * distance + 8 * a) * distance - 4 * a, 0))
    weights = xp.where(offsets[None, :] < count[:, None], weights, real(0)).astype(real)
    total = weights.sum(axis=1, keepdims=True)
    weights = xp.where(total != 0, weights / xp.where(total != 0, total, 1), weights)
    return xp.minimum(low[:, None] + offsets[None, :], n_in - 1), weights


def _cubic_weights(t):
    """The four weights of cubic convolution (A = -0.75) at fractional offset t."""
    a = CUBIC_A

    def near(s):  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _interpolate_plan(xp, x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias):
    sizes, scales, corners = _plan(x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    real = xp.float64 if x.dtype == xp.float64 else xp.float32
    taps = _antialias_taps if antialias else _taps
    return [taps(xp, n, o, s, mode, corners, real) for n, o, s in zip(x.shape[2:], sizes, scales)]


def _interpolate_kernel(xp, x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                        recompute_scale_factor=None, antialias=False):
    if x.dtype.kind != "f":
        raise RuntimeError(f'"upsample_{mode}" not implemented for \'{x.dtype.name}\'')
    taps = _interpolate_plan(xp, x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    out = x
    for axis, (positions, weights) in enumerate(taps, start=2):
        shape = [1] * x.ndim
        shape[axis] = -1
        total = None
        for t in range(positions.shape[1]):
            term = xp.take(out, positions[:, t], axis=axis)
            if mode not in ("nearest", "nearest-exact"):
                term = term * weights[:, t].astype(x.dtype).reshape(shape)
            total = term if total is None else total + term
        out = total
    return out.astype(x.dtype, copy=False)


def _interpolate_grad(ctx, g):
    taps = _interpolate_plan(ctx.xp, ctx.input, ctx.size, ctx.scale_factor, ctx.mode, ctx.align_corners,
                             ctx.recompute_scale_factor, ctx.antialias)
    return (_resampled_grad(ctx.xp, ctx.input, taps, g),) + (None,) * 6


def _resampled_grad(xp, x, taps, g):
    """The gradient of resampling `x` by `taps` (each output position's input positions and weights)."""
    for axis, (positions, weights) in reversed(list(enumerate(taps, start=2))):
        n_in = x.shape[axis]
        matrix = xp.zeros((positions.shape[0], n_in), dtype=g.dtype)
        rows = xp.broadcast_to(xp.arange(positions.shape[0])[:, None], positions.shape)
        xp.add.at(matrix, (rows, positions), weights.astype(g.dtype))
        g = xp.moveaxis(xp.moveaxis(g, axis, -1) @ matrix, -1, axis)
    return xp.ascontiguousarray(g)


def _interpolate_rule(x, size=None, scale_factor=None, mode="nearest", *rest):
    if x.shape is None or not is_known(size) or not is_known(scale_factor):
        return TensorType(x.dtype, None, x.device)
    spatial = len(x.shape) - 2
    if size is not None:
        sizes = _as_list(size, spatial)
    elif scale_factor is not None:
        sizes = [math.floor(float(n) * f) if isinstance(n, int) else None
                 for n, f in zip(x.shape[2:], _as_list(scale_factor, spatial))]
    else:
        return TensorType(x.dtype, None, x.device)
    return TensorType(x.dtype, tuple(x.shape[:2]) + tuple(sizes), x.device)


register("interpolate(input: Tensor, size: int[]? = None, scale_factor: float[]|float? = None, "
         "mode: str = 'nearest', align_corners: bool? = None, recompute_scale_factor: bool? = None, "
         "antialias: bool = False) -> Tensor", OPAQUE, _interpolate_kernel, shape=_interpolate_rule,
         grad=_interpolate_grad, method=False, function=False, keeps_layout=True,
         doc="Resizes the spatial dims of (N, C, *spatial) to size or by scale_factor, with torch's sampling rules.")


def _sizes_of(size) -> list[int]:
    if size.ndim != 1 or size.dtype.kind not in "iu":
        raise RuntimeError(f"interpolate: the output size must be a 1-d integer tensor, got {size.ndim}-d "
                           f"{size.dtype.name}")
    return [int(n) for n in size.tolist()]


def _interpolate_to_kernel(xp, x, size, mode="nearest", align_corners=None, antialias=False):
    return _interpolate_kernel(xp, x, _sizes_of(size), None, mode, align_corners, None, antialias)


def _interpolate_to_grad(ctx, g):
    taps = _interpolate_plan(ctx.xp, ctx.input, _sizes_of(ctx.size), None, ctx.mode, ctx.align_corners, None,
                             ctx.antialias)
    return _resampled_grad(ctx.xp, ctx.input, taps, g), None, None, None, None


def _interpolate_to_rule(x, size, *rest):
    if x.shape is None:
        return TensorType(x.dtype, None, x.device)
    return TensorType(x.dtype, tuple(x.shape[:2]) + (None,) * (len(x.shape) - 2), x.device)


register("interpolate.size_tensor(input: Tensor, size: Tensor, mode: str = 'nearest', align_corners: bool? = None, "
         "antialias: bool = False) -> Tensor", OPAQUE, _interpolate_to_kernel, shape=_interpolate_to_rule,
         grad=_interpolate_to_grad, method=False, function=False, keeps_layout=True,
         doc="interpolate to the sizes a 1-d integer tensor holds: F.interpolate by a tensor scale_factor with "
         "recompute_scale_factor, whose output size jit.trace keeps computed from the input's size.")
# F.upsample: the deprecated spelling of interpolate (its defaults agree)
alias("upsample", "interpolate")


# --- grid_sample ----------------------------------------------------------------------

def _unnormalize(xp, coord, size, align_corners):
    """Grid coordinates in [-1, 1] to input positions, and d position / d coordinate."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _reflect(xp, coord, twice_low, twice_high):
    """torch's reflect_coordinates, and its derivative (+1 or -1)."""
    if twice_low == twice_high:
        return xp.zeros_like(coord), xp.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = coord - low
    sign = xp.where(shifted < 0, -1.0, 1.0)
    shifted = xp.abs(shifted)
    extra = xp.fmod(shifted, span)
    flips = xp.floor(shifted / span)
    even = (flips % 2) == 0
    return xp.where(even, extra + low, span - extra + low), xp.where(even, sign, -sign)


def _apply_padding(xp, coord, size, padding_mode, align_corners):
    """(coordinate after border/reflection handling, its derivative w.r.t. the incoming one)."""
    slope = xp.ones_like(coord)
    if padding_mode == "border":
        slope = ((coord > 0) & (coord < size - 1)).astype(coord.dtype)
        coord = xp.clip(coord, 0, size - 1)
    elif padding_mode == "reflection":
        if align_corners:
            coord, slope = _reflect(xp, coord, 0, 2 * (size - 1))
        else:
            coord, slope = _reflect(xp, coord, -1, 2 * size - 1)
        slope = slope * ((coord > 0) & (coord < size - 1))
        coord = xp.clip(coord, 0, size - 1)
    return coord, slope


def _grid_taps(xp, coord, size, mode, padding_mode, align_corners):
    """Per spatial dim: a list of (position, weight, d weight / d source coordinate, in bounds), and the
    derivative of the source coordinate w.r.t. the grid value."""
    position, scale = _unnormalize(xp, coord, size, align_corners)
    if mode == "bicubic":
        base = xp.floor(position)
        t = position - base
        weights = _cubic_weights(t)
        slopes = _cubic_slopes(t)
        taps = []
        for k in range(4):
            index = base + (k - 1)
            padded, _ = _apply_padding(xp, index, size, padding_mode, align_corners)
            rounded = padded.astype(xp.int64)
            taps.append((rounded, weights[k], slopes[k], (rounded >= 0) & (rounded < size)))
        return taps, scale * xp.ones_like(position)
    position, slope = _apply_padding(xp, position, size, padding_mode, align_corners)
    if mode == "nearest":
        index = xp.rint(position).astype(xp.int64)
        return [(index, xp.ones_like(position), xp.zeros_like(position), (index >= 0) & (index < size))], \
            scale * slope
    low = xp.floor(position)
    frac = position - low
    low = low.astype(xp.int64)
    ones = xp.ones_like(position)
    return [(low, 1 - frac, -ones, (low >= 0) & (low < size)),
            (low + 1, frac, ones, (low + 1 >= 0) & (low + 1 < size))], scale * slope


def _cubic_slopes(t):
    """d/dt of the four cubic convolution weights."""
    a = CUBIC_A

    def near(s):
        return (3 * (a + 2) * s - 2 * (a + 3)) * s

    def far(s):
        return (3 * a * s - 10 * a) * s + 8 * a
    return far(t + 1), near(t), -near(1 - t), -far(2 - t)


def _grid_check(x, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ArgumentError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                            f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ArgumentError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                            f"'reflection', but got: '{padding_mode}'")
    spatial = x.ndim - 2
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(x.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != spatial:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {spatial} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if grid.shape[0] != x.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(x.shape)} and grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and x.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def _grid_corners(xp, x, grid, mode, padding_mode, align_corners):
    """Every tap combination: (flat input index (N, *out), weight, per-dim weight factors and slopes, mask)."""
    spatial = x.ndim - 2
    sizes = x.shape[2:]
    # grid's last dim lists x (width) first
    per_dim = [_grid_taps(xp, grid[..., spatial - 1 - d], sizes[d], mode, padding_mode, bool(align_corners))
               for d in range(spatial)]
    corners = []
    for choice in itertools.product(*(range(len(taps)) for taps, _ in per_dim)):
        picked = [per_dim[d][0][k] for d, k in enumerate(choice)]
        flat = xp.zeros(grid.shape[:-1], dtype=xp.int64)
        mask = xp.ones(grid.shape[:-1], dtype=bool)
        for (index, _, _, inside), size in zip(picked, sizes):
            flat = flat * size + xp.clip(index, 0, size - 1)
            mask = mask & inside
        corners.append((flat, picked, mask))
    return corners, [scale for _, scale in per_dim]


def _gather(xp, x, flat):
    n, c = x.shape[:2]
    plane = x.reshape(n, c, -1)
    picked = xp.take_along_axis(plane, flat.reshape(n, 1, -1), axis=2)
    return picked.reshape((n, c) + flat.shape[1:])


def _grid_sample_kernel(xp, x, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    _grid_check(x, grid, mode, padding_mode)
    corners, _ = _grid_corners(xp, x, grid.astype(x.dtype), mode, padding_mode, align_corners)
    out = xp.zeros((x.shape[0], x.shape[1]) + grid.shape[1:-1], dtype=x.dtype)
    for flat, picked, mask in corners:
        weight = mask.astype(x.dtype)
        for _, w, _, _ in picked:
            weight = weight * w
        out += _gather(xp, x, flat) * weight[:, None]
    return out


def _grid_sample_grad(ctx, g):
    xp, x, grid = ctx.xp, ctx.input, ctx.grid
    corners, scales = _grid_corners(xp, x, grid.astype(x.dtype), ctx.mode, ctx.padding_mode, ctx.align_corners)
    n, c = x.shape[:2]
    plane = math.prod(x.shape[2:])
    spatial = x.ndim - 2
    gx = xp.zeros(n * c * plane, dtype=xp.float64)
    d_coord = [xp.zeros(grid.shape[:-1], dtype=g.dtype) for _ in range(spatial)]
    channel_offsets = (xp.arange(n)[:, None] * c + xp.arange(c)[None, :]) * plane   # (N, C)
    for flat, picked, mask in corners:
        weights = [w for _, w, _, _ in picked]
        weight = mask.astype(g.dtype)
        for w in weights:
            weight = weight * w
        targets = channel_offsets.reshape((n, c) + (1,) * (flat.ndim - 1)) + flat[:, None]
        gx += xp.bincount(targets.reshape(-1), weights=(g * weight[:, None]).reshape(-1).astype(xp.float64),
                          minlength=gx.size)
        if ctx.mode == "nearest":
            continue
        g_dot_value = (g * _gather(xp, x, flat)).sum(axis=1) * mask
        for d in range(spatial):
            partial = picked[d][2]
            for e, w in enumerate(weights):
                if e != d:
                    partial = partial * w
            d_coord[d] += g_dot_value * partial
    g_grid = xp.stack([d_coord[spatial - 1 - k] * scales[spatial - 1 - k] for k in range(spatial)], axis=-1)
    return gx.astype(g.dtype).reshape(x.shape), g_grid.astype(grid.dtype), None, None, None


register("grid_sample(input: Tensor, grid: Tensor, mode: str = 'bilinear', padding_mode: str = 'zeros', "
         "align_corners: bool? = None) -> Tensor", OPAQUE, _grid_sample_kernel,
         shape=lambda x, grid, *rest: TensorType(x.dtype, None if x.shape is None or grid.shape is None else
                                                 tuple(x.shape[:2]) + tuple(grid.shape[1:-1]), x.device),
         grad=_grid_sample_grad, save=("input", "grid"), method=False, functional=True,
         doc="Samples input at the normalized coordinates of grid ((N, H_out, W_out, 2): x, y in [-1, 1]).")


# --- affine_grid ------------------------------------------------------------------------

def _linspace(xp, n, align_corners, dtype):
    if n <= 1:
        return xp.zeros(n, dtype=dtype)
    steps = xp.linspace(-1, 1, n).astype(dtype)
    return steps if align_corners else steps * (n - 1) / n


def _base_grid(xp, size, align_corners, dtype):
    """(prod(spatial), d + 1): each output point's normalized coordinates (x first) and a 1."""
    spatial = list(size[2:])
    axes = [_linspace(xp, n, align_corners, dtype) for n in spatial]
    mesh = xp.meshgrid(*axes, indexing="ij")
    coords = [m.reshape(-1) for m in reversed(mesh)] + [xp.ones(math.prod(spatial), dtype=dtype)]
    return xp.stack(coords, axis=1)


def _affine_grid_check(theta, size):
    if theta.dtype.kind != "f":
        raise ArgumentError(f"Expected theta to have floating point type, but got torch.{theta.dtype.name}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    d = len(size) - 2
    if theta.ndim != 3 or theta.shape[1:] != (d, d + 1):
        kind = "2D affine matrices of shape Nx2x3" if d == 2 else "3D affine matrices of shape Nx3x4"
        raise ArgumentError(f"Expected a batch of {kind} for size {list(size)}. Got torch.Size({list(theta.shape)}).")
    if min(size) <= 0:
        raise ArgumentError(f"Expected non-zero, positive output size. Got {list(size)}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {d + 1}] but "
                           f"got: [{theta.shape[0]}, {d + 1}].")


def _affine_grid_kernel(xp, theta, size, align_corners=None):
    _affine_grid_check(theta, size)
    base = _base_grid(xp, size, bool(align_corners), theta.dtype)
    grid = xp.matmul(base[None], theta.swapaxes(1, 2))
    return grid.reshape((size[0],) + tuple(size[2:]) + (len(size) - 2,))


def _affine_grid_grad(ctx, g):
    xp, size = ctx.xp, ctx.size
    base = _base_grid(xp, size, bool(ctx.align_corners), g.dtype)
    rows = g.reshape(size[0], -1, len(size) - 2)
    return xp.matmul(rows.swapaxes(1, 2), base[None]), None, None


register("affine_grid(theta: Tensor, size: int[], align_corners: bool? = None) -> Tensor", OPAQUE,
         _affine_grid_kernel,
         shape=lambda theta, size, *rest: TensorType(theta.dtype, None if not is_known(size) else
                                                     (size[0],) + tuple(size[2:]) + (len(size) - 2,), theta.device),
         grad=_affine_grid_grad, method=False, functional=True,
         doc="The sampling grid of an affine transform theta (N, 2, 3) or (N, 3, 4) for an output of size.")
