"""torch.onnx.operators: shapes as tensors, so that a trace keeps the sizes it reads as values computed
from its inputs."""

from __future__ import annotations

from scriptc.ops import OPS
from scriptc.tensors import Tensor, call

__all__ = ["shape_as_tensor", "reshape_from_tensor_shape"]


def shape_as_tensor(x: Tensor) -> Tensor:
    """The sizes of `x` as a 1-d int64 tensor (torch._shape_as_tensor)."""
    return call(OPS["_shape_as_tensor"], (x,))


def reshape_from_tensor_shape(x: Tensor, shape: Tensor) -> Tensor:
    """`x` reshaped to the sizes a 1-d integer tensor holds."""
    return x.reshape([int(size) for size in shape.tolist()])
