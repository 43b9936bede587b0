"""Attention functions of torch.nn.functional."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import scriptc
from scriptc.tensors import Tensor

from .dropout import dropout

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v; a bool mask keeps the True positions, as in PyTorch."""
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, True)[0]


def _attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor], dropout_p: float,
               is_causal: bool, scale: Optional[float], training: bool) -> Tuple[Tensor, Tensor]:
    """(attention output, attention weights); written in the script subset, so scripted modules call it."""
    if scale is None:
        factor = 1.0 / math.sqrt(float(query.size(-1)))
    else:
        factor = scale
    scores = scriptc.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        keep = scriptc.arange(query.size(-2)).unsqueeze(1) >= scriptc.arange(key.size(-2)).unsqueeze(0)
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == scriptc.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = scriptc.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training)
    return scriptc.matmul(weights, value), weights
