"""Dropout functions of torch.nn.functional: each the call of its op, in place for `inplace=True`."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _activation

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _dropout_op(name: str, input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if inplace and (not training or p == 0.0):
        return input  # torch's dropout_ leaves its input alone here: nothing is written, nothing recorded
    return _activation(name, input, inplace, p, training)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes elements with probability p and scales the others by 1/(1-p), in training."""
    return _dropout_op("dropout", input, p, training, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, L) or (C, L) inputs."""
    return _dropout_op("dropout1d", input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, H, W) inputs (3-D inputs are taken as (N, C, L), as torch does)."""
    return _dropout_op("dropout2d", input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _dropout_op("dropout3d", input, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU activations at zero mean and unit variance."""
    return _dropout_op("alpha_dropout", input, p, training, inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels."""
    return _dropout_op("feature_alpha_dropout", input, p, training, inplace)
