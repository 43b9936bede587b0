"""Attention: scaled_dot_product_attention and multi_head_attention_forward, composed of matmuls, softmax and
masks (written in the script subset, so scripted modules compile them too)."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import scriptc
from scriptc.backends.cuda import cpu_sdp_kernel
from scriptc.tensors import Tensor

from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _canonical_mask(mask: Optional[Tensor], mask_name: str, like: Tensor) -> Optional[Tensor]:
    """torch's mask canonicalisation: a bool mask (True = not allowed) becomes an additive float mask of
    like's dtype; float masks pass as they are."""
    if mask is None:
        return None
    is_bool = mask.dtype == scriptc.bool
    if not is_bool and mask.dtype != scriptc.float32 and mask.dtype != scriptc.float64 and \
            mask.dtype != scriptc.float16:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if is_bool:
        return like.new_zeros(mask.shape).masked_fill(mask, float("-inf"))
    return mask


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with rows that are all -inf (fully masked) giving 0 rather than NaN."""
    masked_rows = (scores == float("-inf")).all(-1, True)
    weights = scriptc.softmax(scores.masked_fill(masked_rows, 0.0), -1)
    return weights.masked_fill(masked_rows, 0.0)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two dims.

    A bool attn_mask keeps the True positions, a float one is added to the scores; is_causal masks the
    future; enable_gqa lets key and value have fewer heads (dim -3) than query. Fully masked rows give 0.
    A call no kernel torch.nn.attention.sdpa_kernel allows would run is refused, as torch refuses it.
    """
    # torch's CPU flash kernel takes 4-D inputs whose last dims are dense, without dropout
    flash = (dropout_p == 0.0 and query.dim() == 4 and query.stride(-1) == 1 and key.stride(-1) == 1
             and value.stride(-1) == 1)
    if not scriptc.jit.is_scripting():
        flash = cpu_sdp_kernel(flash) == "flash"
    if enable_gqa:
        groups = query.size(-3) // key.size(-3)
        if query.size(-3) % key.size(-3) != 0 or query.size(-3) % value.size(-3) != 0:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key = _repeat_heads(key, groups)
        value = _repeat_heads(value, query.size(-3) // value.size(-3))
    factor = 1.0 / math.sqrt(float(query.size(-1))) if scale is None else scale
    scores = scriptc.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        future = scriptc.arange(key.size(-2)).unsqueeze(0) > scriptc.arange(query.size(-2)).unsqueeze(1)
        scores = scores.masked_fill(future, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == scriptc.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    out = scriptc.matmul(weights, value)
    if flash and query.stride(1) < query.stride(2):
        # torch's CPU flash kernel writes the result of a query laid out (batch, length, heads, dim) in that
        # layout, and code written against it (the SDPA tutorial) views out.transpose(1, 2) without a copy
        out = out.transpose(1, 2).contiguous().transpose(1, 2)
    return out


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """Each head of x (dim -3) repeated `times` times in place, as repeat_interleave does."""
    heads = x.size(-3)
    return x.index_select(x.dim() - 3, scriptc.arange(heads * times) // times)


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor],
                     attn_mask: Optional[Tensor], num_heads: int) -> bool:
    """Whether the call is batched (3-D query), after torch's checks of every argument's rank."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 2:
                raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                                     f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 1:
                raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                     f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = [num_heads, query.size(0), key.size(0)]
                if list(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {tuple(expected)} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _in_projection(query: Tensor, key: Tensor, value: Tensor, embed_dim: int, in_proj_weight: Optional[Tensor],
                   in_proj_bias: Optional[Tensor], use_separate_proj_weight: bool, q_proj_weight: Optional[Tensor],
                   k_proj_weight: Optional[Tensor], v_proj_weight: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    """query, key and value projected by the packed in_proj_weight's thirds, or by the three separate weights."""
    e = embed_dim
    b_q: Optional[Tensor] = None
    b_k: Optional[Tensor] = None
    b_v: Optional[Tensor] = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.narrow(0, 0, e), in_proj_bias.narrow(0, e, e), in_proj_bias.narrow(0, 2 * e, e)
    if use_separate_proj_weight:
        if q_proj_weight is not None:
            if k_proj_weight is not None:
                if v_proj_weight is not None:
                    return (linear(query, q_proj_weight, b_q),
                            linear(key, k_proj_weight, b_k),
                            linear(value, v_proj_weight, b_v))
        raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight "
                             "is None")
    if in_proj_weight is not None:
        return (linear(query, in_proj_weight.narrow(0, 0, e), b_q),
                linear(key, in_proj_weight.narrow(0, e, e), b_k),
                linear(value, in_proj_weight.narrow(0, 2 * e, e), b_v))
    raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Optional[Tensor], in_proj_bias: Optional[Tensor],
                                 bias_k: Optional[Tensor], bias_v: Optional[Tensor], add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Optional[Tensor],
                                 training: bool = True, key_padding_mask: Optional[Tensor] = None,
                                 need_weights: bool = True, attn_mask: Optional[Tensor] = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Optional[Tensor] = None,
                                 k_proj_weight: Optional[Tensor] = None, v_proj_weight: Optional[Tensor] = None,
                                 static_k: Optional[Tensor] = None, static_v: Optional[Tensor] = None,
                                 average_attn_weights: bool = True,
                                 is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
    """MultiheadAttention's computation on (L, N, E) query and (S, N, kdim/vdim) key/value (or unbatched 2-D).

    Masks: key_padding_mask (N, S) and attn_mask (L, S) or (N * num_heads, L, S), bool ones marking the
    positions NOT to attend. Returns (output, attention weights averaged over heads, or per head, or None).
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.size(0), query.size(1), query.size(2)
    src_len = key.size(0)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal hint alone goes to scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.size(0) != value.size(0) or key.size(1) != value.size(1):
            raise AssertionError(f"key's sequence and batch dims {(key.size(0), key.size(1))} do not match value's "
                                 f"{(value.size(0), value.size(1))}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    q, k, v = _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                             q_proj_weight, k_proj_weight, v_proj_weight)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if list(attn_mask.shape) != [tgt_len, src_len]:
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if list(attn_mask.shape) != [bsz * num_heads, tgt_len, src_len]:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None:
        if bias_v is not None:
            if static_k is not None or static_v is not None:
                raise AssertionError("bias cannot be added to static key or value.")
            k = scriptc.cat([k, bias_k.expand(1, bsz, embed_dim)])
            v = scriptc.cat([v, bias_v.expand(1, bsz, embed_dim)])
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
    # (L, N, E) -> (N, heads, L, head_dim): the batch keeps its own dim, so shapes stay symbolic in it
    q = q.reshape(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "static_k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "static_v")
    if add_zero_attn:
        k = scriptc.cat([k, scriptc.zeros_like(k.narrow(2, 0, 1))], 2)
        v = scriptc.cat([v, scriptc.zeros_like(v.narrow(2, 0, 1))], 2)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.size(2)
    mask: Optional[Tensor] = None
    if attn_mask is not None:
        mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 else \
            attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
    if key_padding_mask is not None:
        if key_padding_mask.size(0) != bsz or key_padding_mask.size(1) != src_len:
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len)
        mask = padding if mask is None else mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = scriptc.matmul(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        weights = scriptc.softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        out = _merge_heads(scriptc.matmul(weights, v), out_proj_weight, out_proj_bias, tgt_len, bsz, embed_dim)
        returned = weights.mean(1) if average_attn_weights else weights
        if not is_batched:
            return out.squeeze(1), returned.squeeze(0)
        return out, returned
    out = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
    out = _merge_heads(out, out_proj_weight, out_proj_bias, tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _merge_heads(out: Tensor, weight: Tensor, bias: Optional[Tensor], tgt_len: int, bsz: int,
                 embed_dim: int) -> Tensor:
    """(N, heads, L, head_dim) -> (L, N, E), then the output projection."""
    merged = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
    return linear(merged, weight, bias)


def _pad_last(mask: Optional[Tensor]) -> Optional[Tensor]:
    """The mask with one more (unmasked) key position at the end, for bias_k or a zero attention slot."""
    if mask is None:
        return None
    return scriptc.cat([mask, scriptc.zeros_like(mask.narrow(-1, 0, 1))], -1)


def _heads(x: Tensor, static: Optional[Tensor], bsz: int, num_heads: int, head_dim: int, name: str) -> Tensor:
    """(S, N, E) -> (N, heads, S, head_dim), or the given static (N * heads, S, head_dim) tensor split by head."""
    if static is None:
        return x.reshape(x.size(0), bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static.reshape(bsz, num_heads, static.size(1), head_dim)
