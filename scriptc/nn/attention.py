"""MultiheadAttention with PyTorch's parameters (in_proj_weight, out_proj) and call signature."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

import scriptc
from scriptc.tensors import Tensor, wrap
from scriptc.types import float32

from . import functional as F
from . import init
from .linear import Linear
from .module import Module, Parameter


class MultiheadAttention(Module):
    """softmax(QK^T/sqrt(d)) V over num_heads heads; inputs are (L, N, E), or (N, L, E) with batch_first."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported by scriptc")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        np_dtype = (dtype or float32).np
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(wrap(np.empty((3 * embed_dim, embed_dim), dtype=np_dtype)))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(wrap(np.empty((embed_dim, embed_dim), dtype=np_dtype)))
            self.k_proj_weight = Parameter(wrap(np.empty((embed_dim, self.kdim), dtype=np_dtype)))
            self.v_proj_weight = Parameter(wrap(np.empty((embed_dim, self.vdim), dtype=np_dtype)))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(wrap(np.zeros(3 * embed_dim, dtype=np_dtype)))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None,
                need_weights: bool = True, attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        tgt_len, bsz, embed = query.shape
        src_len = key.size(0)
        if embed != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {embed}")
        q, k, v = self._project(query, key, value)
        h, d = self.num_heads, self.head_dim
        # (L, N, E) -> (N, H, L, D)
        q = q.reshape(tgt_len, bsz, h, d).permute(1, 2, 0, 3)
        k = k.reshape(src_len, bsz, h, d).permute(1, 2, 0, 3)
        v = v.reshape(src_len, bsz, h, d).permute(1, 2, 0, 3)
        mask = self._combined_mask(attn_mask, key_padding_mask, bsz, tgt_len, src_len, query)
        out, weights = F._attention(q, k, v, mask, self.dropout if self.training else 0.0, is_causal, None,
                                    self.training)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.embed_dim)
        out = self.out_proj(out)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights

    def _combined_mask(self, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor], bsz: int, tgt_len: int,
                       src_len: int, like: Tensor) -> Optional[Tensor]:
        """One additive float mask of shape (N, H or 1, L, S), or None."""
        mask: Optional[Tensor] = None
        if attn_mask is not None:
            if attn_mask.dim() == 2:
                if attn_mask.size(0) != tgt_len or attn_mask.size(1) != src_len:
                    raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                       f"{(tgt_len, src_len)}.")
                combined = attn_mask.reshape(1, 1, tgt_len, src_len)
            elif attn_mask.dim() == 3:
                if attn_mask.size(0) != bsz * self.num_heads or attn_mask.size(1) != tgt_len or \
                        attn_mask.size(2) != src_len:
                    raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                       f"{(bsz * self.num_heads, tgt_len, src_len)}.")
                combined = attn_mask.reshape(bsz, self.num_heads, tgt_len, src_len)
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
            if combined.dtype == scriptc.bool:
                combined = like.new_zeros(combined.shape).masked_fill(combined, float("-inf"))
            mask = combined
        if key_padding_mask is not None:
            if key_padding_mask.size(0) != bsz or key_padding_mask.size(1) != src_len:
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                     f"{key_padding_mask.shape}")
            pad = key_padding_mask.reshape(bsz, 1, 1, src_len)
            if pad.dtype == scriptc.bool:
                pad = like.new_zeros(pad.shape).masked_fill(pad, float("-inf"))
            if mask is None:
                mask = pad
            else:
                mask = mask + pad
        return mask
