"""torch.nn.grad: the gradients of a convolution with respect to its input and its weight, for
custom autograd Functions that write their own backward (the fused conv-bn tutorial's pattern).

Each is the backward pass of the convolution op, asked for one of its inputs: the result is
differentiable in the tensors given (double backward through a custom Function works)."""

from __future__ import annotations

from typing import Sequence

from scriptc import autograd
from scriptc.tensors import Tensor

from .functional import conv1d, conv2d, conv3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _size(name: str, size) -> tuple:
    if isinstance(size, Tensor) or not all(isinstance(s, int) for s in size):
        raise TypeError(f"{name}(): argument 'input_size' must be a sequence of ints, not {type(size).__name__}")
    return tuple(size)


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    x = weight.new_zeros(_size(conv.__name__ + "_input", input_size)).requires_grad_()
    with autograd.enable_grad():
        out = conv(x, weight, None, stride, padding, dilation, groups)
        _check_grad_shape(out, grad_output)
        return autograd.grad(out, x, grad_output, create_graph=_needs_graph(weight, grad_output))[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    w = input.new_zeros(_size(conv.__name__ + "_weight", weight_size)).requires_grad_()
    with autograd.enable_grad():
        out = conv(input, w, None, stride, padding, dilation, groups)
        _check_grad_shape(out, grad_output)
        return autograd.grad(out, w, grad_output, create_graph=_needs_graph(input, grad_output))[0]


def _needs_graph(*tensors: Tensor) -> bool:
    return autograd.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _check_grad_shape(out: Tensor, grad_output: Tensor) -> None:
    if tuple(out.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"Expected grad_output to have shape {list(out.shape)}, "
                           f"but got shape {list(grad_output.shape)}")


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """Gradient of conv1d with respect to an input of shape `input_size`."""
    return _input_grad(conv1d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """Gradient of conv1d with respect to a weight of shape `weight_size`."""
    return _weight_grad(conv1d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """Gradient of conv2d with respect to an input of shape `input_size`."""
    return _input_grad(conv2d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """Gradient of conv2d with respect to a weight of shape `weight_size`."""
    return _weight_grad(conv2d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """Gradient of conv3d with respect to an input of shape `input_size`."""
    return _input_grad(conv3d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """Gradient of conv3d with respect to a weight of shape `weight_size`."""
    return _weight_grad(conv3d, input, weight_size, grad_output, stride, padding, dilation, groups)
