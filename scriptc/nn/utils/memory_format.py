"""convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format (torch.nn.utils)."""

from __future__ import annotations

from scriptc import autograd

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, layers: tuple):
    if isinstance(module, layers):
        with autograd.no_grad():
            module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, layers)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Store the weights of every Conv2d / ConvTranspose2d in module in memory_format (channels_last);
    returns module."""
    from scriptc.nn import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Store the weights of every Conv3d / ConvTranspose3d in module in memory_format; returns module."""
    from scriptc.nn import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
