"""Loss functions of torch.nn.functional."""

from __future__ import annotations

import warnings

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["cross_entropy", "nll_loss", "mse_loss"]


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def cross_entropy(input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    return _op("cross_entropy", input, target, weight, ignore_index,
               _legacy_reduction(size_average, reduce, reduction), label_smoothing)


def nll_loss(input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean") -> Tensor:
    return _op("nll_loss", input, target, weight, ignore_index, _legacy_reduction(size_average, reduce, reduction))


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting.", stacklevel=2)
    return _op("mse_loss", input, target, _legacy_reduction(size_average, reduce, reduction))
