"""The loss functions of torch.nn.functional. Most are compositions of pointwise ops and reductions (so
autograd, tracing, scripting and fusion see through them); nll_loss, cross_entropy, mse_loss,
binary_cross_entropy and ctc_loss call their own op-table entries (scriptc/ops/loss.py)."""

from __future__ import annotations

import math
import warnings
from typing import Callable, List, Optional, Union

import scriptc
from scriptc.amp.policy import float32_under_autocast
from scriptc.tensors import Tensor

from ._calls import _op
from .distance import pairwise_distance

__all__ = ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "soft_margin_loss", "ctc_loss", "nll_loss", "cross_entropy"]


def _legacy_reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str) -> str:
    """The reduction named by the deprecated size_average/reduce pair, when either is given."""
    if size_average is None and reduce is None:
        return reduction
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _weighted_reduce(loss: Tensor, weight: Optional[Tensor], input: Tensor, reduction: str) -> Tensor:
    """torch's element-weighted reduction: 'mean' divides by the sum of the weights."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    if reduction not in ("none", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return _reduce(loss, reduction)


def _warn_if_broadcast(input: Tensor, target: Tensor) -> None:
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)


def _log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) without overflow: -(max(-x, 0) + log(1 + exp(-|x|)))."""
    return -((-x).clamp(min=0.0) + (1.0 + (-x.abs()).exp()).log())


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """Mean (or sum) absolute error |input - target|."""
    _warn_if_broadcast(input, target)
    if not scriptc.jit.is_scripting() and weight is None:  # torch's CPU autocast runs l1_loss in float32
        input, target = float32_under_autocast(input, target)
    return _weighted_reduce((input - target).abs(), weight, input, _legacy_reduction(size_average, reduce, reduction))


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """Mean (or sum) squared error (input - target)^2."""
    _warn_if_broadcast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        d = input - target
        return _weighted_reduce(d * d, weight, input, reduction)
    return _op("mse_loss", input, target, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target)."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    _warn_if_broadcast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(scriptc.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (d = input - target)."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    _warn_if_broadcast(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = scriptc.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is None:
        return _reduce(loss, reduction)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    return _reduce(loss * weight, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1] (logs clamped at -100)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    return _op("binary_cross_entropy", input, target, weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                     reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits; pos_weight scales the
    positive term per class."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    log_sig = _log_sigmoid(input)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence target * (log target - input), input being log-probabilities; 'batchmean'
    divides the sum by the batch size (the mathematical KL divergence)."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target * scriptc.where(target == 0, scriptc.ones_like(target), target).log() - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.size(0) if input.dim() != 0 else total
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Optional[bool] = None, eps: float = 1e-8, reduce: Optional[bool] = None,
                     reduction: str = "mean") -> Tensor:
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full adds Stirling's term."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = scriptc.where(target > 1, target, scriptc.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + scriptc.where(target > 1, stirling, scriptc.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Union[Tensor, float], full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log 2 pi with full); var is clamped at eps without
    changing its gradient, as torch does."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * scriptc.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(y for x, y in zip(input.size(), var.size()) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin), target being 1 or -1."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input1, input2, target = float32_under_autocast(input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Optional[bool] = None,
                         reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where target is -1."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = scriptc.zeros_like(input)
    below_margin = scriptc.where(target != 1, (margin - input).clamp(min=0.0), zeros)
    return _reduce(below_margin + scriptc.where(target != -1, input, zeros), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where target is -1."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input1, input2 = float32_under_autocast(input1, input2)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if dim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.size())} and {list(input2.size())}.")
    if dim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.size())} and {list(input2.size())}.")
    eps = 1e-12
    cos = (input1 * input2).sum(dim) / (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    zeros = scriptc.zeros_like(cos)
    positive = scriptc.where(target == 1, 1 - cos, zeros)
    negative = scriptc.where(target == -1, (cos - margin).clamp(min=0.0), zeros)
    return _reduce(positive + negative, reduction)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, size_average: Optional[bool] = None,
                        reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm pairwise distance d."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        anchor, positive, negative = float32_under_autocast(anchor, positive, negative)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = scriptc.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp(min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Optional[Callable[[Tensor, Tensor], Tensor]] = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance function (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = scriptc.minimum(dist_neg, distance(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp(min=0.0), reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                           reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Sum over the listed target classes j (the target row up to its first -1) and the other classes i of
    max(0, 1 - (input[j] - input[i])), divided by the number of classes."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        (input,) = float32_under_autocast(input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    batched = input.dim() == 2
    if input.dim() not in (1, 2) or (not batched and input.size(0) == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.size())}")
    x = input if batched else input.unsqueeze(0)
    t = target if batched else target.unsqueeze(0)
    if t.size() != x.size():
        raise RuntimeError(f"inconsistent target size: {list(target.size())} for input of size: "
                           f"{list(input.size())}")
    classes = x.size(1)
    if bool(((t < -1) | (t >= classes)).any()):
        raise RuntimeError("target index is out of range")
    listed = (t == -1).long().cumsum(1) == 0                         # entries before the first -1
    safe = scriptc.where(listed, t, scriptc.zeros_like(t))
    class_ids = scriptc.arange(classes)
    is_target = ((safe.unsqueeze(2) == class_ids) & listed.unsqueeze(2)).any(1)    # (N, C)
    hinge = (1 - x.gather(1, safe).unsqueeze(2) + x.unsqueeze(1)).clamp(min=0.0)   # (N, K, C)
    counted = listed.unsqueeze(2) & is_target.logical_not().unsqueeze(1)
    loss = (hinge * counted.to(hinge.dtype)).sum([1, 2]) / classes
    return _reduce(loss if batched else loss.squeeze(0), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over the classes: one value per sample before the reduction."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                      reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Sum over the classes i other than the target y of max(0, margin - input[y] + input[i])^p (times
    weight[y]), divided by the number of classes."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        (input,) = float32_under_autocast(input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    batched = input.dim() == 2
    if input.dim() not in (1, 2) or (not batched and input.size(0) == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.size())}")
    x = input if batched else input.unsqueeze(0)
    t = target.reshape(-1)
    if t.size(0) != x.size(0):
        raise RuntimeError(f"inconsistent target size, expected {x.size(0)} but got {list(target.size())}")
    classes = x.size(1)
    if bool(((t < 0) | (t >= classes)).any()):
        raise RuntimeError("target out of range")
    hinge = (margin - x.gather(1, t.unsqueeze(1)) + x).clamp(min=0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight[t].unsqueeze(1)
    others = (scriptc.arange(classes) != t.unsqueeze(1)).to(hinge.dtype)
    loss = (hinge * others).sum(1) / classes
    return _reduce(loss if batched else loss.squeeze(0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                     reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), the two-class logistic loss."""
    if not scriptc.jit.is_scripting():  # torch's CPU autocast runs this loss in float32
        input, target = float32_under_autocast(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((1 + (-target * input).exp()).log(), reduction)


def _lengths(lengths) -> Tensor:
    if isinstance(lengths, Tensor):
        return lengths
    return scriptc.tensor(list(lengths) if isinstance(lengths, (list, tuple)) else [lengths], dtype=scriptc.int64)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Union[Tensor, List[int]],
             target_lengths: Union[Tensor, List[int]], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss: -log p(targets | log_probs) over every alignment.

    log_probs (T, N, C) (or (T, C)) should come from log_softmax; targets are (N, S) padded or the
    concatenation of all target sequences; 'mean' divides each loss by its target length, then averages.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _op("ctc_loss", log_probs, targets, _lengths(input_lengths), _lengths(target_lengths), blank, reduction, zero_infinity)


def _check_batch(input: Tensor, target: Tensor) -> None:
    if input.dim() > 1 and target.dim() > 0 and input.size(0) != target.size(0):
        raise ValueError(f"Expected input batch_size ({input.size(0)}) to match target batch_size "
                         f"({target.size(0)}).")


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """-input[class] per sample (input holds log-probabilities along dim 1), weighted, ignoring ignore_index."""
    _check_batch(input, target)
    return _op("nll_loss", input, target, weight, ignore_index, _legacy_reduction(size_average, reduce, reduction))


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 then nll_loss; targets are class indices or class probabilities."""
    if not target.is_floating_point():
        _check_batch(input, target)
    return _op("cross_entropy", input, target, weight, ignore_index,
               _legacy_reduction(size_average, reduce, reduction), label_smoothing)
