"""torch.ao.nn.intrinsic: the fused float modules torch.ao.quantization.fuse_modules makes (a layer and
the ReLU after it, run in order as one module)."""

from __future__ import annotations

from scriptc import nn

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "BNReLU2d", "BNReLU3d"]


class _FusedModule(nn.Sequential):
    """A layer of type `layer_type` and a ReLU, checked as torch checks them."""

    layer_type: type = nn.Module

    def __init__(self, layer, relu):
        if type(layer) is not self.layer_type or type(relu) is not nn.ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(layer)}{type(relu)}")
        super().__init__(layer, relu)


class ConvReLU1d(_FusedModule):
    """Conv1d then ReLU."""
    layer_type = nn.Conv1d


class ConvReLU2d(_FusedModule):
    """Conv2d then ReLU."""
    layer_type = nn.Conv2d


class ConvReLU3d(_FusedModule):
    """Conv3d then ReLU."""
    layer_type = nn.Conv3d


class LinearReLU(_FusedModule):
    """Linear then ReLU."""
    layer_type = nn.Linear


class BNReLU2d(_FusedModule):
    """BatchNorm2d then ReLU."""
    layer_type = nn.BatchNorm2d


class BNReLU3d(_FusedModule):
    """BatchNorm3d then ReLU."""
    layer_type = nn.BatchNorm3d
