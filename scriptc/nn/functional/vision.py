"""The vision functions of torch.nn.functional: resampling (interpolate, grid_sample, affine_grid),
pixel and channel shuffles, and fold/unfold; each the call of its op."""

from __future__ import annotations

import warnings
from typing import Optional

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "unfold", "fold"]

_ALIGN_CORNERS_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                          "documentation of grid_sample for details.")


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """Resizes the spatial dims of (N, C, *spatial) to `size`, or by `scale_factor` (mode: nearest,
    nearest-exact, linear, bilinear, bicubic, trilinear or area). A tensor `scale_factor` with
    `recompute_scale_factor=True` (torchvision's detection transform) gives the output size
    floor(size * scale_factor) computed as tensors, so that jit.trace keeps it following the input."""
    if isinstance(scale_factor, Tensor) and recompute_scale_factor and size is None:
        spatial = _op("_shape_as_tensor", input)[2:]
        sizes = (spatial.float() * scale_factor.float()).floor().long()
        return _op("interpolate.size_tensor", input, sizes, mode, align_corners, antialias)
    return _op("interpolate", input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: Optional[bool] = None) -> Tensor:
    """Deprecated spelling of interpolate."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: Optional[bool] = None) -> Tensor:
    """Samples input (N, C, H, W) at grid's normalized coordinates ((N, H_out, W_out, 2), x then y in [-1, 1])."""
    if align_corners is None and mode in ("bilinear", "nearest", "bicubic") and \
            padding_mode in ("zeros", "border", "reflection"):
        warnings.warn(_ALIGN_CORNERS_CHANGED, stacklevel=2)
    return _op("grid_sample", input, grid, mode, padding_mode, align_corners)


def affine_grid(theta: Tensor, size: list[int], align_corners: Optional[bool] = None) -> Tensor:
    """The grid grid_sample needs to apply affine transforms theta ((N, 2, 3), or (N, 3, 4) in 3-D)."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_CHANGED, stacklevel=2)
    return _op("affine_grid", theta, list(size), align_corners)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    return _op("pixel_shuffle", input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    return _op("pixel_unshuffle", input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Splits the channels into `groups` groups and interleaves them."""
    return _op("channel_shuffle", input, groups)


native_channel_shuffle = channel_shuffle


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Every sliding block of (N, C, H, W) as a column: (N, C * prod(kernel_size), L)."""
    return _op("im2col", input, kernel_size, dilation, padding, stride)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sums sliding blocks (N, C * prod(kernel_size), L) back into (N, C, *output_size)."""
    return _op("col2im", input, output_size, kernel_size, dilation, padding, stride)


# jit.script calls their ops (F.unfold is named like Tensor.unfold, a different op)
unfold._scriptc_op, fold._scriptc_op = "im2col", "col2im"
