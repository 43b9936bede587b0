"""Pooling functions of torch.nn.functional: each the call of its op (the `_with_indices` op when
indices are asked for); lp_pool and max_unpool's output size are torch's compositions."""

from __future__ import annotations

import math
from typing import List, Optional

import scriptc
from scriptc.tensors import Tensor

from ._calls import _op
from .annotations import BroadcastingList1, BroadcastingList2, BroadcastingList3  # noqa: F401
from .activation import relu

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d",
           "lp_pool2d", "lp_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


def _max_pool(dims: int, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    suffix = "_with_indices" if return_indices else ""
    return _op(f"max_pool{dims}d{suffix}", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The largest value of each window of (N, C, L); with return_indices also its index in L."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The largest value of each window of (N, C, H, W); with return_indices also its flat index in H*W."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The largest value of each window of (N, C, D, H, W); with return_indices also its flat index."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of (N, C, L)."""
    return _op("avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each window of (N, C, H, W) (divided by divisor_override when given)."""
    return _op("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each window of (N, C, D, H, W) (divided by divisor_override when given)."""
    return _op("avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, L) to output_size."""
    return _op("adaptive_avg_pool1d", input, _with_input_sizes(output_size, input))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, H, W) to output_size (None entries keep the input's size)."""
    return _op("adaptive_avg_pool2d", input, _with_input_sizes(output_size, input))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, D, H, W) to output_size (None entries keep the input's size)."""
    return _op("adaptive_avg_pool3d", input, _with_input_sizes(output_size, input))


def _with_input_sizes(output_size, input: Tensor):
    """output_size with its None entries replaced by the input's sizes (torch's _list_with_default)."""
    if not isinstance(output_size, (list, tuple)):
        return output_size
    return [input.size(d - len(output_size)) if v is None else v for d, v in enumerate(output_size)]


def _adaptive_max(dims: int, input, output_size, return_indices):
    return _op(f"adaptive_max_pool{dims}d{'_with_indices' if return_indices else ''}", input,
               _with_input_sizes(output_size, input))


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, L) to output_size; with return_indices also the indices."""
    return _adaptive_max(1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, H, W) to output_size; with return_indices also the flat indices."""
    return _adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, D, H, W) to output_size; with return_indices also the flat indices."""
    return _adaptive_max(3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    return _adaptive_max(1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    return _adaptive_max(2, input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    return _adaptive_max(3, input, output_size, True)


def _tuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


# F.max_unpoolNd take the pooling window and are compiled from their source (no op stands for them: "");
# the op each calls takes the output size
SCRIPTED_OPS = {**{f"max_unpool{d}d": "" for d in (1, 2, 3)},
                **{f"_max_unpool{d}d_op": f"max_unpool{d}d" for d in (1, 2, 3)}}


def _unpool_output_size(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                        output_size: Optional[List[int]]) -> List[int]:
    """torch's rule: the default ((in - 1) * stride + kernel - 2 * padding), or output_size checked
    to be within a stride of it."""
    default: List[int] = []
    for d in range(len(kernel_size)):
        default.append((input.size(-len(kernel_size) + d) - 1) * stride[d] + kernel_size[d] - 2 * padding[d])
    if output_size is None:
        return default
    size = output_size  # (torch's message shows it as given: a tuple stays one)
    if len(size) == len(kernel_size) + 2:
        size = size[2:]
    if len(size) != len(kernel_size):
        raise ValueError(f"output_size should be a sequence containing {len(kernel_size)} or "
                         f"{len(kernel_size) + 2} elements, but it has a length of '{len(size)}'")
    for d in range(len(kernel_size)):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < size[d] < high:
            raise ValueError(f'invalid output_size "{size}" (dim {d} must be between {low} and {high})')
    return list(size)


def _unpool_size(dims: int, input: Tensor, kernel_size: List[int], stride: Optional[List[int]],
                 padding: List[int], output_size: Optional[List[int]]) -> List[int]:
    """The output size of max_unpool{dims}d (eager calls may pass an int or a tuple for each window list)."""
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size] * dims
    if isinstance(stride, int):
        stride = [stride] * dims
    if isinstance(padding, int):
        padding = [padding] * dims
    steps = list(kernel_size) if stride is None else list(stride)
    return _unpool_output_size(input, list(kernel_size), steps, list(padding), output_size)


def _max_unpool1d_op(input: Tensor, indices: Tensor, output_size: List[int]) -> Tensor:
    return _op("max_unpool1d", input, indices, output_size)


def _max_unpool2d_op(input: Tensor, indices: Tensor, output_size: List[int]) -> Tensor:
    return _op("max_unpool2d", input, indices, output_size)


def _max_unpool3d_op(input: Tensor, indices: Tensor, output_size: List[int]) -> Tensor:
    return _op("max_unpool3d", input, indices, output_size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList1[int],
                 stride: Optional[BroadcastingList1[int]] = None, padding: BroadcastingList1[int] = 0,
                 output_size: Optional[List[int]] = None) -> Tensor:
    """The inverse of max_pool1d: values put back at their indices, zeros elsewhere."""
    return _max_unpool1d_op(input, indices, _unpool_size(1, input, kernel_size, stride, padding, output_size))


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList2[int],
                 stride: Optional[BroadcastingList2[int]] = None, padding: BroadcastingList2[int] = 0,
                 output_size: Optional[List[int]] = None) -> Tensor:
    """The inverse of max_pool2d: values put back at their indices, zeros elsewhere."""
    return _max_unpool2d_op(input, indices, _unpool_size(2, input, kernel_size, stride, padding, output_size))


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList3[int],
                 stride: Optional[BroadcastingList3[int]] = None, padding: BroadcastingList3[int] = 0,
                 output_size: Optional[List[int]] = None) -> Tensor:
    """The inverse of max_pool3d: values put back at their indices, zeros elsewhere."""
    return _max_unpool3d_op(input, indices, _unpool_size(3, input, kernel_size, stride, padding, output_size))


def _window_pool(dims: int, maximum: bool, input: Tensor, kernel_size: List[int], stride: List[int],
                 ceil_mode: bool) -> Tensor:
    """max_pool{dims}d or avg_pool{dims}d without padding."""
    if maximum:
        if dims == 1:
            return max_pool1d(input, kernel_size, stride, 0, 1, ceil_mode)
        if dims == 2:
            return max_pool2d(input, kernel_size, stride, 0, 1, ceil_mode)
        return max_pool3d(input, kernel_size, stride, 0, 1, ceil_mode)
    if dims == 1:
        return avg_pool1d(input, kernel_size, stride, 0, ceil_mode)
    if dims == 2:
        return avg_pool2d(input, kernel_size, stride, 0, ceil_mode)
    return avg_pool3d(input, kernel_size, stride, 0, ceil_mode)


def _lp_pool(dims: int, input: Tensor, norm_type: float, kernel_size: List[int], stride: Optional[List[int]],
             ceil_mode: bool) -> Tensor:
    """(sum of x^p over each window)^(1/p), as torch composes it from avg_pool (scripted code runs it too)."""
    if isinstance(kernel_size, int):  # (eager calls pass an int for every dim; scripted ones a list already)
        kernel_size = [kernel_size] * dims
    if isinstance(stride, int):
        stride = [stride] * dims
    steps = kernel_size if stride is None else stride
    if norm_type == math.inf:
        return _window_pool(dims, True, input.abs(), kernel_size, steps, ceil_mode)
    if norm_type == -math.inf:
        return -_window_pool(dims, True, -input.abs(), kernel_size, steps, ceil_mode)
    out = _window_pool(dims, False, input.pow(norm_type), kernel_size, steps, ceil_mode)
    taps = 1
    for k in kernel_size:
        taps *= k
    return (scriptc.sign(out) * relu(scriptc.abs(out))).mul(taps).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: BroadcastingList1[int],
              stride: Optional[BroadcastingList1[int]] = None, ceil_mode: bool = False) -> Tensor:
    """The norm_type-norm of each window of (N, C, L)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: BroadcastingList2[int],
              stride: Optional[BroadcastingList2[int]] = None, ceil_mode: bool = False) -> Tensor:
    """The norm_type-norm of each window of (N, C, H, W)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: BroadcastingList3[int],
              stride: Optional[BroadcastingList3[int]] = None, ceil_mode: bool = False) -> Tensor:
    """The norm_type-norm of each window of (N, C, D, H, W)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _fractional_max_pool(dims: int, input: Tensor, kernel_size, output_size, output_ratio, _random_samples):
    """(values, indices), as torch: output_size from output_ratio of the input's spatial sizes when not given;
    one uniform sample per (batch, channel, spatial dim) from the default generator when none are given."""
    name = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _tuple(output_ratio, dims)
        if len(ratio) > dims:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(input.size(d - dims) * ratio[d]) for d in range(dims)]
    if _random_samples is None:
        batch = 1 if input.dim() == dims + 1 else input.size(0)
        _random_samples = scriptc.rand(batch, input.size(-dims - 1), dims, dtype=input.dtype)
    return _op(name, input, list(_tuple(kernel_size, dims)), list(_tuple(output_size, dims)), _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """Max pooling of (N, C, H, W) with kernel_size windows at pseudo-random fractional strides down to
    output_size (or output_ratio of H, W); with return_indices also the flat index in H*W."""
    out = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """Max pooling of (N, C, T, H, W) with kernel_size windows at pseudo-random fractional strides down to
    output_size (or output_ratio of T, H, W); with return_indices also the flat index in T*H*W."""
    out = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]
