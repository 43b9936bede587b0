"""Transformer, TransformerEncoder/Decoder and their layers, with PyTorch's arguments, submodule names and
initialisation (post-norm by default, pre-norm with norm_first)."""

from __future__ import annotations

import copy
from typing import Callable, Optional, Union

import scriptc
from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (position i may attend to j <= i)."""
    positions = scriptc.arange(sz)
    future = positions.unsqueeze(0) > positions.unsqueeze(1)
    return scriptc.zeros([sz, sz], dtype=dtype or scriptc.get_default_dtype()).masked_fill(future, float("-inf"))


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: their submodules, in torch's order, and the self-attention
    block. A decoder layer (cross_attention) also attends over the encoder's memory and has a third norm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                 activation: Union[str, Callable[[Tensor], Tensor]], layer_norm_eps: float, batch_first: bool,
                 norm_first: bool, bias: bool, dtype, device, cross_attention: bool):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype, device=device)
        if cross_attention:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                     bias=bias, dtype=dtype, device=device)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype, device=device)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype, device=device)
        self.norm_first = norm_first
        for i in range(3 if cross_attention else 2):
            setattr(self, f"norm{i + 1}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype,
                                                    device=device))
        for i in range(3 if cross_attention else 2):
            setattr(self, f"dropout{i + 1}", Dropout(dropout))
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) else activation

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                  is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and LayerNorm."""
    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Union[str, Callable[[Tensor], Tensor]] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, dtype, device, cross_attention=False)

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = F._canonical_mask(src_key_padding_mask, "src_key_padding_mask", src)
        src_mask = F._canonical_mask(src_mask, "src_mask", src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's memory, then a feed-forward block (each residual + norm)."""
    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Union[str, Callable[[Tensor], Tensor]] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, dtype, device, cross_attention=True)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                   is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer applied in turn, then the optional norm.

    enable_nested_tensor and mask_check are accepted for compatibility; scriptc has no nested tensors,
    so padded positions are always computed (and masked), which gives the same outputs.
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Optional[Module] = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None) -> Tensor:
        src_key_padding_mask = F._canonical_mask(src_key_padding_mask, "src_key_padding_mask", src)
        mask = F._canonical_mask(mask, "mask", src)
        causal = False
        if is_causal is not None:
            causal = is_causal
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer applied in turn over (tgt, memory), then the optional norm."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Optional[Module] = None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        causal = False
        if tgt_is_causal is not None:
            causal = tgt_is_causal
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need"; weights of rank > 1 are Xavier-uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Union[str, Callable[[Tensor], Tensor]] = F.relu,
                 custom_encoder: Optional[Module] = None, custom_decoder: Optional[Module] = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, dtype=dtype,
                                                    device=device)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, device=device)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, dtype=dtype,
                                                    device=device)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, device=device)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Optional[Tensor] = None,
                tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None, tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, src_is_causal: Optional[bool] = None,
                tgt_is_causal: Optional[bool] = None, memory_is_causal: bool = False) -> Tensor:
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """(sz, sz) float mask: 0 where position i may attend to j (j <= i), -inf above the diagonal."""
        return _generate_square_subsequent_mask(sz, device, dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
