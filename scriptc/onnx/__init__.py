"""torch.onnx's helpers that model code calls while it is traced (torchvision's detection transforms ask
whether an ONNX export is running and read image sizes as tensors); scriptc has no ONNX exporter."""

from __future__ import annotations

from . import operators

__all__ = ["is_in_onnx_export", "operators"]


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: always False, as scriptc exports no ONNX."""
    return False
