"""Lookups: embedding (padding_idx, max_norm, scale_grad_by_freq), embedding_bag and one_hot."""

from __future__ import annotations

from typing import Optional

import scriptc
from scriptc import autograd
from scriptc.ops import OPS
from scriptc.tensors import Tensor, call

__all__ = ["embedding", "embedding_bag", "one_hot"]


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of weight at the integer indices in input. With max_norm, the looked-up rows of weight are first
    rescaled in place to norm at most max_norm. Gradients are dense (sparse=True gives the same values)."""
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if max_norm is not None:
        with autograd.no_grad():
            call(OPS["embedding_renorm_"], (weight, input.contiguous(), max_norm, norm_type))
    return call(OPS["embedding"], (input, weight, padding_idx, scale_grad_by_freq))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None, max_norm: Optional[float] = None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None, include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """Sum, mean or max of the embedding rows of each bag: the rows of a 2-D input, or the slices of a 1-D
    input that start at offsets. per_sample_weights (mode 'sum') scale each looked-up row."""
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = scriptc.arange(0, input.numel(), input.size(1), dtype=input.dtype)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        with autograd.no_grad():
            call(OPS["embedding_renorm_"], (weight, input, max_norm, norm_type))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if padding_idx is not None and padding_idx < 0:
        padding_idx = weight.size(0) + padding_idx
    return call(OPS["embedding_bag"], (weight, input, offsets, mode, per_sample_weights, include_last_offset,
                                        padding_idx))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension; num_classes=-1 uses max(tensor) + 1."""
    if tensor.dtype != scriptc.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    checked = tensor.numel() and not tensor.is_meta  # (a meta tensor has no values to check)
    if checked and bool((tensor < 0).any()):
        raise RuntimeError("Class values must be non-negative.")
    if checked and bool((tensor >= num_classes).any()):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == scriptc.arange(num_classes, device=tensor.device)).long()
