"""Embedding and EmbeddingBag: lookup tables with PyTorch's options, parameter names and initialisation."""

from __future__ import annotations

from typing import Optional

from scriptc import autograd
from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .module import Module, Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _normalized_padding_idx(padding_idx: Optional[int], num_embeddings: int) -> Optional[int]:
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    if padding_idx < 0:
        if padding_idx < -num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx += num_embeddings
    return padding_idx


def _table(num_embeddings: int, embedding_dim: int, _weight: Optional[Tensor], _freeze: bool, dtype,
           device) -> Parameter:
    if _weight is None:
        return Parameter(_empty(num_embeddings, embedding_dim, dtype=dtype, device=device), requires_grad=not _freeze)
    if list(_weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return Parameter(_weight, requires_grad=not _freeze)


def _normal_with_zero_padding_row(weight: Parameter, padding_idx: Optional[int]) -> None:
    init.normal_(weight)
    if padding_idx is not None:
        with autograd.no_grad():
            weight[padding_idx].fill_(0)


def _norm_options_repr(table: Module) -> str:
    """The max_norm, norm_type and scale_grad_by_freq part of an embedding's repr (only what differs from the
    defaults)."""
    text = ""
    if table.max_norm is not None:
        text += f", max_norm={table.max_norm}"
    if table.norm_type != 2:
        text += f", norm_type={table.norm_type}"
    if table.scale_grad_by_freq is not False:
        text += f", scale_grad_by_freq={table.scale_grad_by_freq}"
    return text


class Embedding(Module):
    """A lookup table of num_embeddings vectors of size embedding_dim, initialised N(0, 1) (padding_idx's row 0)."""
    __constants__ = [
        "num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
        "sparse",
    ]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None,
                 max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Optional[Tensor] = None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _normalized_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = _table(num_embeddings, embedding_dim, _weight, _freeze, dtype, device)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        _normal_with_zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        text += _norm_options_repr(self)
        if self.sparse is not False:
            text += ", sparse=True"
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: Optional[int] = None,
                        max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding whose weight is `embeddings` (2-D), frozen unless freeze=False."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without materialising the per-index rows' sequence."""
    __constants__ = [
        "num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse",
        "include_last_offset", "padding_idx",
    ]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Optional[Tensor] = None, include_last_offset: bool = False, padding_idx: Optional[int] = None,
                 device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = _normalized_padding_idx(padding_idx, num_embeddings)
        self.weight = _table(num_embeddings, embedding_dim, _weight, False, dtype, device)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        _normal_with_zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}" + _norm_options_repr(self)
        text += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: Optional[float] = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: Optional[int] = None) -> "EmbeddingBag":
        """An EmbeddingBag whose weight is `embeddings` (2-D), frozen unless freeze=False."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
