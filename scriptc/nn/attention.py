"""torch.nn.attention: which scaled_dot_product_attention kernels may run (SDPBackend, sdpa_kernel); and
MultiheadAttention with PyTorch's parameters (in_proj_weight or q/k/v_proj_weight, out_proj, bias_k/bias_v) and
call signature, computed by F.multi_head_attention_forward."""

from __future__ import annotations

import contextlib
import enum
from typing import Optional, Tuple, Union

from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .linear import NonDynamicallyQuantizableLinear
from .module import Module, Parameter

__all__ = ["SDPBackend", "sdpa_kernel", "MultiheadAttention"]


class SDPBackend(enum.Enum):
    """A scaled_dot_product_attention kernel, as torch numbers them. scriptc runs every call with its one
    (math) kernel; sdpa_kernel's choice decides which calls are refused, as torch's CPU kernels refuse them."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


# torch.backends.cuda's switch for each backend
_SWITCHES = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
             "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
             "overrideable": SDPBackend.OVERRIDEABLE}


@contextlib.contextmanager
def sdpa_kernel(backends: Union[list, SDPBackend], set_priority: bool = False):
    """`with sdpa_kernel(SDPBackend.MATH):` (or a list of backends) lets only those scaled_dot_product_attention
    kernels run inside the block (torch.backends.cuda's *_sdp_enabled() say so); the previous choice comes
    back after it. set_priority is accepted (scriptc has one kernel to order)."""
    from scriptc.backends import cuda

    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    with cuda._switched(**{name: backend in chosen for name, backend in _SWITCHES.items()}) as state:
        yield state


class MultiheadAttention(Module):
    """Attention over num_heads heads; inputs are (L, N, E), or (N, L, E) with batch_first, or unbatched (L, E).

    Masks follow torch: key_padding_mask (N, S) and attn_mask (L, S) or (N * num_heads, L, S), where a
    bool True marks a position not to attend and a float value is added to the scores.
    """
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Optional[int] = None,
                 vdim: Optional[int] = None, batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_empty(3 * embed_dim, embed_dim, dtype=dtype, device=device))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(_empty(embed_dim, embed_dim, dtype=dtype, device=device))
            self.k_proj_weight = Parameter(_empty(embed_dim, self.kdim, dtype=dtype, device=device))
            self.v_proj_weight = Parameter(_empty(embed_dim, self.vdim, dtype=dtype, device=device))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_empty(3 * embed_dim, dtype=dtype, device=device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype, device=device)
        if add_bias_kv:
            self.bias_k = Parameter(_empty(1, 1, embed_dim, dtype=dtype, device=device))
            self.bias_v = Parameter(_empty(1, 1, embed_dim, dtype=dtype, device=device))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
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
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None,
                need_weights: bool = True, attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """(attention output, attention weights averaged over heads (or per head), or None)."""
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            query, key, value = query.transpose(1, 0), key.transpose(1, 0), value.transpose(1, 0)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights
