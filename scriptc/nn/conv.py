"""Convolution layers (Conv1d/2d/3d, ConvTranspose1d/2d/3d) with torch's constructor arguments,
attributes, parameter shapes, initialisation and repr."""

from __future__ import annotations

import math

from scriptc.tensors import Size, Tensor

from . import functional as F
from . import init
from .common import _empty, _ntuple, _reverse_repeat_tuple
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}
_PADDING_STRINGS = {"same", "valid"}


class _ConvNd(Module):
    """What every convolution layer shares; `dims` is the number of spatial dims."""
    __constants__ = [
        "stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
        "out_channels", "kernel_size",
    ]

    dims = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", output_padding=0, device=None,
                 dtype=None):
        super().__init__()
        expand = _ntuple(self.dims)
        kernel_size, stride, dilation = expand(kernel_size), expand(stride), expand(dilation)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = expand(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.output_padding, self.groups, self.padding_mode = expand(output_padding), groups, padding_mode
        self._reversed_padding_repeated_twice = self._pad_for_f_pad()
        if self.transposed:
            shape = (in_channels, out_channels // groups) + kernel_size
        else:
            shape = (out_channels, in_channels // groups) + kernel_size
        self.weight = Parameter(_empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_for_f_pad(self) -> list[int]:
        """The padding as F.pad takes it (last dim first), for padding modes other than zeros."""
        if not isinstance(self.padding, str):
            return list(_reverse_repeat_tuple(self.padding))
        pads = [0, 0] * self.dims
        if self.padding == "same":
            for d, k, i in zip(self.dilation, self.kernel_size, range(self.dims - 1, -1, -1)):
                total = d * (k - 1)
                pads[2 * i], pads[2 * i + 1] = total // 2, total - total // 2
        return pads

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L); weight is (out_channels, in_channels // groups, k)."""

    dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                            self.bias, self.stride, [0], self.dilation, self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W); weight is (out_channels, in_channels // groups, kh, kw)."""

    dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                            self.bias, self.stride, [0, 0], self.dilation, self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W); weight is (out_channels, in_channels // groups, kd, kh, kw)."""

    dims = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                            self.bias, self.stride, [0, 0, 0], self.dilation, self.groups)
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, _ntuple(self.dims)(padding), dilation,
                         groups, bias, padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size: list[int] | None) -> list[int]:
        """output_padding, or the one that makes the output `output_size` (spatial, or with N and C)."""
        if output_size is None:
            return list(self.output_padding)
        dims = self.dims
        leading = 2 if input.dim() == dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == leading + dims:
            output_size = output_size[leading:]
        if len(output_size) != dims:
            raise ValueError(f"ConvTranspose{dims}D: for {input.dim()}D input, output_size must have {dims} or "
                             f"{leading + dims} elements (got {len(output_size)})")
        smallest = [(input.size(d + leading) - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(dims)]
        largest = [low + self.stride[d] - 1 for d, low in enumerate(smallest)]
        for size, low, high in zip(output_size, smallest, largest):
            if size < low or size > high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} "
                                 f"to {largest} (for an input of {Size(input.size()[leading:])})")
        return [size - low for size, low in zip(output_size, smallest)]


class ConvTranspose1d(_ConvTransposeNd):
    """The adjoint of Conv1d (a learnt upsampling); weight is (in_channels, out_channels // groups, k)."""

    dims = 1

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """The adjoint of Conv2d (a learnt upsampling); weight is (in_channels, out_channels // groups, kh, kw)."""

    dims = 2

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """The adjoint of Conv3d; weight is (in_channels, out_channels // groups, kd, kh, kw)."""

    dims = 3

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)
