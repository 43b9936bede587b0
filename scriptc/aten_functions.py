"""torch functions whose signature is ATen's where torch.nn.functional's differs: `torch.embedding(weight,
indices)` against `F.embedding(input, weight)`, `torch.batch_norm(input, weight, bias, running_mean, ...)`,
losses taking reduction as ATen's int (0 none, 1 mean, 2 sum), grid_sampler's int modes, and the ATen
results F does not give (torch.embedding_bag's four tensors, torch.adaptive_max_pool1d's indices). Each
calls the functional form, so it traces and scripts as that does."""

from __future__ import annotations

import functools
import inspect
from typing import List, Optional, Tuple, Union

import scriptc
import scriptc.nn.functional as F
from scriptc.tensors import Tensor

__all__ = ["embedding", "embedding_bag", "batch_norm", "instance_norm", "layer_norm", "group_norm", "native_layer_norm",
           "native_batch_norm", "ctc_loss", "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss",
           "adaptive_max_pool1d", "max_pool1d_with_indices", "grid_sampler", "affine_grid_generator"]


def _parsed(fn):
    """`fn` raising torch's TypeError for a Tensor parameter given something else, as ATen's argument
    parser does before anything runs; scripted code compiles `fn` itself."""
    signature = inspect.signature(fn)
    checked = [(position, name, parameter.annotation == "Optional[Tensor]")
               for position, (name, parameter) in enumerate(signature.parameters.items())
               if parameter.annotation in ("Tensor", "Optional[Tensor]")]

    @functools.wraps(fn)
    def parsed(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        for position, name, optional in checked:
            value = bound.get(name)
            if name in bound and not isinstance(value, Tensor) and not (optional and value is None):
                where = f" (position {position + 1})" if position < len(args) else ""
                raise TypeError(f"{fn.__name__}(): argument '{name}'{where} must be Tensor, not "
                                f"{type(value).__name__}")
        return fn(*args, **kwargs)
    parsed.__prepare_scriptable__ = lambda: fn
    return parsed


def _reduction(reduction: Optional[int]) -> str:
    """The name of ATen's reduction number (1 mean, 2 sum, any other none). Left out (None), it is 'none'
    in an eager call and 'mean' in scripted code: torch's eager bindings do not read ATen's default (Mean)
    and take 0."""
    if reduction is None:
        return "mean" if scriptc.jit.is_scripting() else "none"
    return "mean" if reduction == 1 else "sum" if reduction == 2 else "none"


@_parsed
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """The rows of weight at indices (F.embedding with weight first); a negative padding_idx means none."""
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0, scale_grad_by_freq)


@_parsed
def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights: Optional[Tensor] = None, include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(the bags' sums, means or maxima (mode 0, 1, 2) as F.embedding_bag gives them, the bag of each index,
    each bag's size without padding_idx's entries, and in mode 2 the index each maximum came from (the bag
    sizes otherwise))."""
    if mode < 0 or mode > 2:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    # (scale_grad_by_freq and sparse: as in F.embedding_bag, gradients are dense and not scaled)
    output = F.embedding_bag(indices, weight, offsets, None, 2.0, False, ["sum", "mean", "max"][mode], False,
                             per_sample_weights, include_last_offset, padding_idx)
    flat = indices.reshape(-1)
    starts = offsets[:-1] if include_last_offset else offsets
    if indices.dim() == 2:
        starts = scriptc.arange(0, flat.numel(), indices.size(1), dtype=flat.dtype)
    positions = scriptc.arange(flat.numel(), dtype=flat.dtype)
    offset2bag = (positions.unsqueeze(1) >= starts.unsqueeze(0)).sum(1) - 1
    counted = flat != (-1 if padding_idx is None else padding_idx % weight.size(0))
    bag_size = scriptc.zeros(starts.numel(), dtype=flat.dtype).index_add(0, offset2bag, counted.to(flat.dtype))
    if mode != 2:
        return output, offset2bag, bag_size, bag_size
    rows = weight.index_select(0, flat)
    picked = scriptc.where(rows == output.index_select(0, offset2bag), flat.unsqueeze(1).expand_as(rows), -1)
    spread = offset2bag.unsqueeze(1).expand_as(rows)
    max_indices = scriptc.full(output.shape, -1, dtype=flat.dtype).scatter_reduce(0, spread, picked, "amax")
    return output, offset2bag, bag_size, max_indices


@_parsed
def batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], running_mean: Optional[Tensor],
               running_var: Optional[Tensor], training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """F.batch_norm with weight and bias before the running statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@_parsed
def instance_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], running_mean: Optional[Tensor],
                  running_var: Optional[Tensor], use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """F.instance_norm with weight and bias before the running statistics."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


@_parsed
def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """F.layer_norm (cudnn_enable changes nothing on the CPU)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


@_parsed
def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """F.group_norm (cudnn_enabled changes nothing on the CPU)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


@_parsed
def native_layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor], bias: Optional[Tensor],
                      eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(layer_norm's result, the mean and 1/sqrt(variance + eps) it normalized by, each with the normalized
    dims kept as size 1)."""
    dims = [input.dim() - 1 - d for d in range(len(normalized_shape))]
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return F.layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd


@_parsed
def native_batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], running_mean: Optional[Tensor],
                      running_var: Optional[Tensor], training: bool, momentum: float,
                      eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(batch_norm's result, the batch's per-channel mean and 1/sqrt(variance + eps) in training; empty
    tensors in evaluation, as torch's CPU kernel gives)."""
    dims = [0] + list(range(2, input.dim()))
    if training:
        mean = input.mean(dims)
        invstd = (input.var(dims, unbiased=False) + eps).rsqrt()
    else:
        mean = input.new_empty([0])
        invstd = input.new_empty([0])
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps), mean, invstd


@_parsed
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Union[Tensor, List[int]],
             target_lengths: Union[Tensor, List[int]], blank: int = 0, reduction: Optional[int] = None,
             zero_infinity: bool = False) -> Tensor:
    """F.ctc_loss with reduction as ATen's number."""
    if isinstance(input_lengths, list):
        input_lengths = scriptc.tensor(input_lengths, dtype=scriptc.int64)
    if isinstance(target_lengths, list):
        target_lengths = scriptc.tensor(target_lengths, dtype=scriptc.int64)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


@_parsed
def kl_div(input: Tensor, target: Tensor, reduction: Optional[int] = None, log_target: bool = False) -> Tensor:
    """F.kl_div with reduction as ATen's number."""
    name = _reduction(reduction)
    # (F.kl_div warns that its 'mean' is not 'batchmean'; ATen's does not)
    loss = F.kl_div(input, target, reduction="none" if name == "mean" else name, log_target=log_target)
    return loss.mean() if name == "mean" else loss


@_parsed
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     pos_weight: Optional[Tensor] = None, reduction: Optional[int] = None) -> Tensor:
    """F.binary_cross_entropy_with_logits with pos_weight before reduction, as ATen's number."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


@_parsed
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: Optional[int] = None) -> Tensor:
    """F.cosine_embedding_loss with reduction as ATen's number."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@_parsed
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: Optional[int] = None) -> Tensor:
    """F.hinge_embedding_loss with reduction as ATen's number."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


@_parsed
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: Optional[int] = None) -> Tensor:
    """F.margin_ranking_loss with reduction as ATen's number."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@_parsed
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """F.poisson_nll_loss with every argument given and reduction as ATen's number."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


@_parsed
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: Optional[int] = None) -> Tensor:
    """F.triplet_margin_loss with reduction as ATen's number."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


@_parsed
def adaptive_max_pool1d(input: Tensor, output_size: List[int]) -> Tuple[Tensor, Tensor]:
    """(the maxima of (N, C, L) or (C, L) pooled to output_size, their indices along L)."""
    return F.adaptive_max_pool1d_with_indices(input, output_size)


@_parsed
def max_pool1d_with_indices(input: Tensor, kernel_size: List[int], stride: List[int] = (), padding: List[int] = (0,),
                            dilation: List[int] = (1,), ceil_mode: bool = False) -> Tuple[Tensor, Tensor]:
    """(max_pool1d's result, the indices along L of its maxima); an empty stride is kernel_size."""
    return F.max_pool1d_with_indices(input, kernel_size, list(stride) if len(stride) else None, padding, dilation,
                                     ceil_mode, True)


@_parsed
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """F.grid_sample with ATen's numbered modes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection (torch reads memory it never wrote for another number: an error here)."""
    if interpolation_mode < 0 or interpolation_mode > 2:
        raise RuntimeError(f"grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), "
                           f"got {interpolation_mode}")
    if padding_mode < 0 or padding_mode > 2:
        raise RuntimeError(f"grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got "
                           f"{padding_mode}")
    return F.grid_sample(input, grid, ["bilinear", "nearest", "bicubic"][interpolation_mode],
                         ["zeros", "border", "reflection"][padding_mode], align_corners)


@_parsed
def affine_grid_generator(theta: Tensor, size: List[int], align_corners: bool) -> Tensor:
    """F.affine_grid."""
    return F.affine_grid(theta, size, align_corners)
