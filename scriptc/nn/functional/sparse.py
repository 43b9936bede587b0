"""Embedding functions of torch.nn.functional."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["embedding"]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported by scriptc")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _op("embedding", input, weight, padding_idx)
