"""Rearrangements of feature maps: pixel_shuffle / pixel_unshuffle, channel_shuffle, and im2col /
col2im (F.unfold / F.fold, the sliding blocks of a convolution, from conv.py's columns and scatter).
Each one's gradient is its inverse (or adjoint)."""

from __future__ import annotations

import math

from scriptc.types import TensorType

from . import register
from .conv import columns, from_inner, scatter, to_inner
from .rules import expand, is_known
from .schema import OPAQUE


def _check_rank(x, name):
    if x.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           f"dimension(s)")


def _shuffle(x, r):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r)."""
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    blocks = x.reshape(tuple(lead) + (oc, r, r, h, w))
    n = len(lead)
    order = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
    return blocks.transpose(order).reshape(tuple(lead) + (oc, h * r, w * r))


def _unshuffle(x, r):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W)."""
    *lead, c, h, w = x.shape
    blocks = x.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    n = len(lead)
    order = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
    return blocks.transpose(order).reshape(tuple(lead) + (c * r * r, h // r, w // r))


def _pixel_shuffle_kernel(xp, x, upscale_factor):
    _check_rank(x, "pixel_shuffle")
    if upscale_factor <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {upscale_factor}")
    if x.shape[-3] % (upscale_factor * upscale_factor):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={x.shape[-3]} is not divisible by "
                           f"{upscale_factor * upscale_factor}")
    return xp.ascontiguousarray(_shuffle(x, upscale_factor))


def _pixel_unshuffle_kernel(xp, x, downscale_factor):
    _check_rank(x, "pixel_unshuffle")
    if downscale_factor <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {downscale_factor}")
    for dim, name in ((-2, "height"), (-1, "width")):
        if x.shape[dim] % downscale_factor:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={x.shape[dim]} is not divisible by {downscale_factor}")
    return xp.ascontiguousarray(_unshuffle(x, downscale_factor))


def _shuffle_rule(factor_up):
    def rule(x, factor):
        if x.shape is None or not isinstance(factor, int):
            return TensorType(x.dtype, None, x.device)
        *lead, c, h, w = x.shape
        known = all(isinstance(d, int) for d in (c, h, w))
        if not known:
            return TensorType(x.dtype, tuple(lead) + (None, None, None), x.device)
        if factor_up:
            return TensorType(x.dtype, tuple(lead) + (c // (factor * factor), h * factor, w * factor), x.device)
        return TensorType(x.dtype, tuple(lead) + (c * factor * factor, h // factor, w // factor), x.device)
    return rule


register("pixel_shuffle(self: Tensor, upscale_factor: int) -> Tensor", OPAQUE, _pixel_shuffle_kernel,
         shape=_shuffle_rule(True), grad=lambda ctx, g: (ctx.xp.ascontiguousarray(_unshuffle(g, ctx.upscale_factor)),
                                                          None),
         method=False, functional=True, doc="(*, C * r^2, H, W) -> (*, C, H * r, W * r): sub-pixel upsampling.")
register("pixel_unshuffle(self: Tensor, downscale_factor: int) -> Tensor", OPAQUE, _pixel_unshuffle_kernel,
         shape=_shuffle_rule(False),
         grad=lambda ctx, g: (ctx.xp.ascontiguousarray(_shuffle(g, ctx.downscale_factor)), None),
         method=False, functional=True, doc="(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of pixel_shuffle.")


def _regroup(xp, x, first, second):
    """Channels (dim 1) seen as (first, second) and transposed: channel_shuffle with first = groups."""
    n, c = x.shape[:2]
    return xp.ascontiguousarray(x.reshape((n, first, second) + x.shape[2:]).swapaxes(1, 2)).reshape(x.shape)


def _channel_shuffle_kernel(xp, x, groups):
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if x.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {x.shape[1]} channels and {groups} "
                           f"groups.")
    return _regroup(xp, x, groups, x.shape[1] // groups)


register("channel_shuffle(self: Tensor, groups: int) -> Tensor", OPAQUE, _channel_shuffle_kernel,
         shape=lambda x, groups: x,
         grad=lambda ctx, g: (_regroup(ctx.xp, g, g.shape[1] // ctx.groups, ctx.groups), None),
         method=False, functional=True, doc="Channels split into groups and interleaved (ShuffleNet).")


# --- im2col / col2im (F.unfold / F.fold) ------------------------------------------------

def _block_geometry(kernel_size, dilation, padding, stride):
    return (expand(kernel_size, 2, "kernel_size"), expand(dilation, 2, "dilation"), expand(padding, 2),
            expand(stride, 2, "stride"))


def _blocks(sizes, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(sizes, kernel, dilation, padding,
                                                                                 stride))


def _im2col_kernel(xp, x, kernel_size, dilation, padding, stride):
    if x.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {x.ndim}D)")
    kernel, dilation, padding, stride = _block_geometry(kernel_size, dilation, padding, stride)
    batched = x if x.ndim == 4 else x[None]
    blocks = _blocks(batched.shape[2:], kernel, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(batched.shape[2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding blocks "
                           f"as {blocks}, but its components must be at least one.")
    padded = to_inner(xp, batched, [(p, p) for p in padding])
    cols = columns(xp, padded, kernel, stride, dilation, blocks, 1)[0]        # (C * K, L * N)
    n = batched.shape[0]
    out = xp.ascontiguousarray(xp.moveaxis(cols.reshape(cols.shape[0], -1, n), -1, 0))
    return out if x.ndim == 4 else out[0]


def _col2im_kernel(xp, x, output_size, kernel_size, dilation, padding, stride):
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    kernel, dilation, padding, stride = _block_geometry(kernel_size, dilation, padding, stride)
    sizes = expand(output_size, 2, "output_size")
    batched = x if x.ndim == 3 else x[None]
    taps = math.prod(kernel)
    if batched.shape[1] % taps:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={batched.shape[1]} and kernel_size={kernel}.")
    blocks = _blocks(sizes, kernel, dilation, padding, stride)
    if math.prod(blocks) != batched.shape[2]:
        raise RuntimeError(f"Given output_size={sizes}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"stride={stride}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
                           f"input.size(2)={batched.shape[2]}.")
    n, channels = batched.shape[0], batched.shape[1] // taps
    cols = xp.ascontiguousarray(xp.moveaxis(batched, 0, -1))                # (C * K, L, N)
    padded = tuple(size + 2 * p for size, p in zip(sizes, padding))
    full = scatter(xp, cols, channels, n, kernel, stride, dilation, blocks, padded)
    out = from_inner(xp, full, tuple(slice(p, p + size) for p, size in zip(padding, sizes)))
    return out if x.ndim == 3 else out[0]


def _im2col_rule(x, kernel_size, dilation, padding, stride):
    if x.shape is None or not all(map(is_known, (kernel_size, dilation, padding, stride))) or \
            not all(isinstance(d, int) for d in x.shape):
        return TensorType(x.dtype, None, x.device)
    kernel, dilation, padding, stride = _block_geometry(kernel_size, dilation, padding, stride)
    blocks = _blocks(x.shape[-2:], kernel, dilation, padding, stride)
    lead = tuple(x.shape[:1]) if len(x.shape) == 4 else ()
    return TensorType(x.dtype, lead + (x.shape[-3] * math.prod(kernel), math.prod(blocks)), x.device)


def _col2im_rule(x, output_size, kernel_size, dilation, padding, stride):
    if x.shape is None or not all(map(is_known, (output_size, kernel_size))) or \
            not all(isinstance(d, int) for d in x.shape):
        return TensorType(x.dtype, None, x.device)
    kernel = expand(kernel_size, 2)
    lead = tuple(x.shape[:1]) if len(x.shape) == 3 else ()
    return TensorType(x.dtype, lead + (x.shape[-2] // math.prod(kernel),) + expand(output_size, 2), x.device)


register("im2col(self: Tensor, kernel_size: int[], dilation: int[] = [1, 1], padding: int[] = [0, 0], "
         "stride: int[] = [1, 1]) -> Tensor", OPAQUE,
         _im2col_kernel, shape=_im2col_rule,
         grad=lambda ctx, g: (_col2im_kernel(ctx.xp, g, ctx.self.shape[-2:], ctx.kernel_size, ctx.dilation,
                                             ctx.padding, ctx.stride), None, None, None, None),
         method=False, function=False,
         doc="F.unfold: every sliding block of (N, C, H, W) as a column of (N, C * kh * kw, L).")
register("col2im(self: Tensor, output_size: int[], kernel_size: int[], dilation: int[] = [1, 1], "
         "padding: int[] = [0, 0], stride: int[] = [1, 1]) -> Tensor", OPAQUE, _col2im_kernel, shape=_col2im_rule,
         grad=lambda ctx, g: (_im2col_kernel(ctx.xp, g, ctx.kernel_size, ctx.dilation, ctx.padding, ctx.stride),
                              None, None, None, None, None),
         method=False, function=False,
         doc="F.fold: columns (N, C * kh * kw, L) summed back into (N, C, *output_size), the adjoint of im2col.")
