"""Loss ops whose kernels need more than pointwise arithmetic: nll_loss, cross_entropy and mse_loss
(class-indexed and spatial), binary_cross_entropy (clamped logs and torch's input check) and ctc_loss
(the alpha-beta recursion, looping over time and vectorized over the batch). The other losses are
compositions of ops in scriptc.nn.functional.loss."""

from __future__ import annotations

import math

from scriptc.errors import ArgumentError
from scriptc.types import TensorType

from . import register
from .matrix import torch_name
from .schema import OPAQUE


def _reduce(xp, loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return xp.asarray(loss.sum())
    if reduction == "mean":
        return xp.asarray(loss.sum() / (loss.size if denom is None else denom))
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce_grad(xp, g, shape, reduction, denom, dtype):
    if reduction == "none":
        return g
    scale = g if reduction == "sum" else g / denom
    return xp.broadcast_to(xp.asarray(scale, dtype=dtype), shape)


def _class_dim_last(x):
    """(N, C, d1, ...) -> (N*d1*..., C); (C,) -> (1, C)."""
    if x.ndim == 1:
        return x[None, :]
    return xp_moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def xp_moveaxis(x, src, dst):
    return x.swapaxes(src, dst) if x.ndim == 2 else x.transpose([i for i in range(x.ndim) if i != src] + [src])


def _check_class_targets(shape: tuple, target) -> None:
    """torch's errors for class-index targets whose shape does not fit an input of `shape` (N, C, d1...)."""
    if len(shape) == 1:
        if target.ndim == 1 and target.shape[0] != 1:
            raise ArgumentError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    elif len(shape) == 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.ndim == 1 and target.shape[0] != shape[0]:
            raise ArgumentError(f"Expected input batch_size ({shape[0]}) to match target batch_size "
                                f"({target.shape[0]}).")
    elif list(target.shape) != [shape[0], *shape[2:]]:
        raise RuntimeError(f"Expected target size {[shape[0], *shape[2:]]}, got {list(target.shape)}")


def _nll_parts(xp, logp, target, weight, ignore_index):
    """Flattened (log_probs (M, C), targets (M,), per-sample weights (M,)) with ignored samples weighted 0."""
    _check_class_targets(logp.shape, target)
    if target.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {torch_name(target.dtype)}")
    lp = _class_dim_last(logp)
    t = target.reshape(-1)
    c = lp.shape[1]
    valid = t != ignore_index
    safe_t = xp.where(valid, t, 0)
    if xp.any((safe_t < 0) | (safe_t >= c)):
        raise IndexError(f"Target {int(t[(safe_t < 0) | (safe_t >= c)][0])} is out of bounds.")
    w = (weight[safe_t] if weight is not None else xp.ones(t.shape, dtype=lp.dtype)) * valid
    return lp, safe_t, w.astype(lp.dtype)


def _nll_loss_kernel(xp, logp, target, weight=None, ignore_index=-100, reduction="mean"):
    lp, t, w = _nll_parts(xp, logp, target, weight, ignore_index)
    picked = -w * lp[xp.arange(lp.shape[0]), t]
    loss = picked.reshape(target.shape)
    return _reduce(xp, loss, reduction, w.sum()).astype(logp.dtype, copy=False)


def _nll_grad_flat(xp, lp_shape, t, w, g_per_sample):
    out = xp.zeros(lp_shape, dtype=g_per_sample.dtype)
    out[xp.arange(lp_shape[0]), t] = -w * g_per_sample
    return out


def _unflatten_class(x_like, flat):
    if x_like.ndim == 1:
        return flat[0]
    moved_shape = (x_like.shape[0],) + x_like.shape[2:] + (x_like.shape[1],)
    return flat.reshape(moved_shape).transpose([0, x_like.ndim - 1] + list(range(1, x_like.ndim - 1)))


def _nll_loss_grad(ctx, g):
    xp = ctx.xp
    lp, t, w = _nll_parts(xp, ctx.input, ctx.target, ctx.weight, ctx.ignore_index)
    per = _reduce_grad(xp, g, ctx.target.shape, ctx.reduction, w.sum(), lp.dtype).reshape(-1)
    return (_unflatten_class(ctx.input, _nll_grad_flat(xp, lp.shape, t, w, per)), None, None, None, None)


def _loss_rule(x, target, *rest):
    reduction = rest[-1] if rest else "mean"
    if reduction == "none":
        return TensorType(x.dtype, target.shape if target.dtype is not None and not target.dtype.is_floating_point
                          else x.shape, x.device)
    return TensorType(x.dtype, (), x.device)


register("nll_loss(input: Tensor, target: Tensor, weight: Tensor? = None, ignore_index: int = -100, "
         "reduction: str = 'mean') -> Tensor", OPAQUE, _nll_loss_kernel, shape=_loss_rule, grad=_nll_loss_grad,
         save=("input",), method=False, functional=True)


def _ce_parts(xp, x, target, weight, ignore_index, label_smoothing):
    from .reduction import _log_softmax_kernel
    logp = _log_softmax_kernel(xp, x, 1 if x.ndim > 1 else 0)
    lp = _class_dim_last(logp)
    c = lp.shape[1]
    if target.dtype.kind == "f" and target.shape == x.shape:  # class probabilities (else class indices)
        probs = _class_dim_last(target)
        if label_smoothing:
            probs = probs * (1 - label_smoothing) + label_smoothing / c
        wc = weight if weight is not None else 1
        coeff = probs * wc                                   # d loss_i / d (-logp_ic)
        return lp, coeff, None, x.size // c if x.ndim > 1 else 1
    lp_, t, w = _nll_parts(xp, logp, target, weight, ignore_index)
    coeff = xp.zeros(lp.shape, dtype=lp.dtype)
    coeff[xp.arange(lp.shape[0]), t] = w * (1 - label_smoothing)
    if label_smoothing:
        wc = weight if weight is not None else xp.ones(c, dtype=lp.dtype)
        coeff += (label_smoothing / c) * wc[None, :] * (w != 0)[:, None]
    return lp, coeff, target.shape, w.sum()


def _cross_entropy_kernel(xp, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    lp, coeff, per_shape, denom = _ce_parts(xp, x, target, weight, ignore_index, label_smoothing)
    per = -(coeff * lp).sum(axis=1)
    if per_shape is None:
        per_shape = (x.shape[0],) + x.shape[2:] if x.ndim > 1 else ()
    return _reduce(xp, per.reshape(per_shape), reduction, denom).astype(x.dtype, copy=False)


def _cross_entropy_grad(ctx, g):
    xp, x = ctx.xp, ctx.input
    lp, coeff, per_shape, denom = _ce_parts(xp, x, ctx.target, ctx.weight, ctx.ignore_index, ctx.label_smoothing)
    if per_shape is None:
        per_shape = (x.shape[0],) + x.shape[2:] if x.ndim > 1 else ()
    per = _reduce_grad(xp, g, per_shape, ctx.reduction, denom, lp.dtype).reshape(-1, 1)
    d_lp = -coeff * per
    d_x = d_lp - xp.exp(lp) * d_lp.sum(axis=1, keepdims=True)
    return (_unflatten_class(x, d_x), None, None, None, None, None)


register("cross_entropy(input: Tensor, target: Tensor, weight: Tensor? = None, ignore_index: int = -100, "
         "reduction: str = 'mean', label_smoothing: float = 0.0) -> Tensor", OPAQUE, _cross_entropy_kernel,
         shape=lambda x, t, w=None, i=-100, reduction="mean", ls=0.0: _loss_rule(x, t, reduction),
         grad=_cross_entropy_grad, save=("input",), method=False, functional=True,
         grad_fn_name=lambda ctx: "NllLossBackward0" if ctx.target.dtype.kind in "iu" and not ctx.label_smoothing
         else None,  # (torch's is log_softmax then nll_loss)
         doc="log_softmax + nll_loss over class dim 1; targets are class indices or probabilities.")


def _mse_kernel(xp, x, target, reduction="mean"):
    if x.shape != target.shape:
        xp.broadcast_shapes(x.shape, target.shape)
    d = x - target
    return _reduce(xp, d * d, reduction).astype(x.dtype, copy=False)


def _mse_grad(ctx, g):
    xp = ctx.xp
    d = ctx.input - ctx.target
    shape = xp.broadcast_shapes(ctx.input.shape, ctx.target.shape)
    scale = _reduce_grad(xp, g, shape, ctx.reduction, math.prod(shape), d.dtype)
    return 2 * d * scale, -2 * d * scale, None


register("mse_loss(input: Tensor, target: Tensor, reduction: str = 'mean') -> Tensor", OPAQUE, _mse_kernel,
         shape=lambda x, t, reduction="mean": TensorType(x.dtype, x.shape if reduction == "none" else (), x.device),
         grad=_mse_grad, save=("input", "target"), method=False, functional=True)


# --- binary cross entropy ------------------------------------------------------------

def _bce_logs(xp, x):
    """log(x) and log(1 - x), each clamped at -100 as torch does (so a certain mistake costs 100, not inf)."""
    from .special import quiet_float_errors
    with quiet_float_errors(xp):
        return xp.maximum(xp.log(x), -100), xp.maximum(xp.log1p(-x), -100)


def _bce_kernel(xp, x, target, weight=None, reduction="mean"):
    if x.size and (x.min() < 0 or x.max() > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x, log_1mx = _bce_logs(xp, x)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(xp, loss, reduction).astype(x.dtype, copy=False)


def _bce_grad(ctx, g):
    xp, x, t, w = ctx.xp, ctx.input, ctx.target, ctx.weight
    shape = xp.broadcast_shapes(x.shape, t.shape)
    scale = _reduce_grad(xp, g, shape, ctx.reduction, math.prod(shape), x.dtype)
    if w is not None:
        scale = scale * w
    g_x = scale * (x - t) / xp.maximum((1 - x) * x, 1e-12)
    log_x, log_1mx = _bce_logs(xp, x)
    g_t = -scale * (log_x - log_1mx)
    return g_x, g_t, None, None


register("binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor? = None, reduction: str = 'mean') "
         "-> Tensor", OPAQUE, _bce_kernel,
         shape=lambda x, t, w=None, reduction="mean": TensorType(x.dtype, x.shape if reduction == "none" else (),
                                                                 x.device),
         grad=_bce_grad, save=("input", "target"), method=False, functional=True,
         doc="-w (t log x + (1 - t) log(1 - x)) for probabilities x, logs clamped at -100.")


# --- connectionist temporal classification -----------------------------------------------

def _logsumexp(xp, *terms):
    stacked = xp.stack(terms)
    top = stacked.max(axis=0)
    safe = xp.where(xp.isneginf(top), 0, top)
    with_exp = xp.exp(stacked - safe).sum(axis=0)
    from .special import quiet_float_errors
    with quiet_float_errors(xp):
        return xp.log(with_exp) + safe


def _ctc_setup(xp, lp, targets, input_lengths, target_lengths, blank):
    """Checked (T, N, C) log-probs, extended labels (N, 2S+1) with blanks between, lengths, and the mask of
    positions s that may be entered from s - 2 (a label differing from the one two back)."""
    t_max, batch, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    in_len = xp.asarray(input_lengths, dtype=xp.int64).reshape(-1)
    tg_len = xp.asarray(target_lengths, dtype=xp.int64).reshape(-1)
    if in_len.shape[0] != batch:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {in_len.shape[0]} for a batch of "
                           f"{batch}")
    if tg_len.shape[0] != batch:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {tg_len.shape[0]} for a batch of "
                           f"{batch}")
    if in_len.size and (in_len.max() > t_max or in_len.min() < 0):
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value "
                           f"{int(in_len.max() if in_len.max() > t_max else in_len.min())}")
    longest = int(tg_len.max()) if batch else 0
    if targets.ndim == 1:
        if int(tg_len.sum()) > targets.shape[0]:
            raise RuntimeError(f"Expected tensor to have size at least {int(tg_len.sum())} at dimension 0, but got "
                               f"size {targets.shape[0]} for argument #2 'targets'")
        padded = xp.zeros((batch, longest), dtype=xp.int64)
        starts = xp.cumsum(tg_len) - tg_len
        for n in range(batch):
            padded[n, :tg_len[n]] = targets[starts[n]:starts[n] + tg_len[n]]
    else:
        if longest > targets.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets'")
        padded = targets[:, :longest].astype(xp.int64)
    width = 2 * longest + 1
    labels = xp.full((batch, width), blank, dtype=xp.int64)
    labels[:, 1::2] = xp.where(xp.arange(longest)[None, :] < tg_len[:, None], padded, blank)
    skip = xp.zeros((batch, width), dtype=bool)
    skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
    return labels, skip, in_len, tg_len


def _ctc_alpha_beta(xp, lp, labels, skip, in_len, tg_len):
    """log alpha and log beta, (T, N, 2S+1) each, and the negative log likelihood per sample."""
    t_max, batch, _ = lp.shape
    width = labels.shape[1]
    rows = xp.arange(batch)[:, None]
    emit = lp[:, rows, labels]                          # (T, N, 2S+1): log-prob of each extended label
    ends = 2 * tg_len + 1                               # valid extended length per sample
    inside = xp.arange(width)[None, :] < ends[:, None]
    neg_inf = -xp.inf
    alpha = xp.full((t_max, batch, width), neg_inf, dtype=lp.dtype)
    if t_max == 0:
        return alpha, alpha, xp.where(tg_len == 0, 0.0, xp.inf).astype(lp.dtype)
    start = xp.full((batch, width), neg_inf, dtype=lp.dtype)
    start[:, :2] = emit[0, :, :2]
    alpha[0] = xp.where(inside & (in_len[:, None] > 0), start, neg_inf)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        one_back = xp.concatenate([xp.full((batch, 1), neg_inf, dtype=lp.dtype), prev[:, :-1]], axis=1)
        two_back = xp.concatenate([xp.full((batch, 2), neg_inf, dtype=lp.dtype), prev[:, :-2]], axis=1)
        two_back = xp.where(skip, two_back, neg_inf)
        step = _logsumexp(xp, prev, one_back, two_back) + emit[t]
        alpha[t] = xp.where(inside & (t < in_len[:, None]), step, neg_inf)
    beta = xp.full((t_max, batch, width), neg_inf, dtype=lp.dtype)
    last_two = (xp.arange(width)[None, :] >= ends[:, None] - 2) & inside
    skip_next = xp.concatenate([skip[:, 2:], xp.zeros((batch, 2), dtype=bool)], axis=1)
    for t in range(t_max - 1, -1, -1):
        if t + 1 < t_max:
            nxt = beta[t + 1]
            one_on = xp.concatenate([nxt[:, 1:], xp.full((batch, 1), neg_inf, dtype=lp.dtype)], axis=1)
            two_on = xp.concatenate([nxt[:, 2:], xp.full((batch, 2), neg_inf, dtype=lp.dtype)], axis=1)
            two_on = xp.where(skip_next, two_on, neg_inf)
            step = _logsumexp(xp, nxt, one_on, two_on) + emit[t]
        else:
            step = xp.full((batch, width), neg_inf, dtype=lp.dtype)
        is_last = (t == in_len - 1)[:, None]
        value = xp.where(is_last, xp.where(last_two, emit[t], neg_inf), step)
        beta[t] = xp.where(inside & (t < in_len[:, None]), value, neg_inf)
    final = alpha[xp.maximum(in_len - 1, 0), xp.arange(batch)]            # (N, 2S+1)
    end_idx = ends - 1
    picked = [final[xp.arange(batch), end_idx], xp.where(end_idx > 0, final[xp.arange(batch), end_idx - 1], neg_inf)]
    log_likelihood = _logsumexp(xp, *picked)
    log_likelihood = xp.where(in_len > 0, log_likelihood, xp.where(tg_len == 0, 0.0, neg_inf))
    return alpha, beta, -log_likelihood


def _ctc_batch(lp, targets):
    """(T, N, C) log-probs and batched targets, also for unbatched (T, C) input."""
    if lp.ndim == 2:
        return lp[:, None, :], targets[None, :] if targets.ndim == 1 else targets
    return lp, targets


def _ctc_reduce(xp, nll, tg_len, reduction):
    if reduction == "mean":
        return xp.asarray((nll / xp.maximum(tg_len, 1)).mean())
    return _reduce(xp, nll, reduction)


def _ctc_kernel(xp, log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                zero_infinity=False):
    lp, tg = _ctc_batch(log_probs, targets)
    labels, skip, in_len, tg_len = _ctc_setup(xp, lp, tg, input_lengths, target_lengths, blank)
    _, _, nll = _ctc_alpha_beta(xp, lp, labels, skip, in_len, tg_len)
    if zero_infinity:
        nll = xp.where(xp.isinf(nll), 0, nll)
    out = _ctc_reduce(xp, nll.astype(lp.dtype), tg_len, reduction)
    if log_probs.ndim == 2 and reduction == "none":
        out = out[0]
    return xp.asarray(out, dtype=log_probs.dtype)


def _ctc_grad(ctx, g):
    """d nll / d log_probs[t, n, c] = -exp(log(sum over s with label c of alpha * beta) + nll - log_probs), the
    exact gradient; it equals torch's wherever log_probs come from log_softmax, as CTC inputs should."""
    xp = ctx.xp
    lp, tg = _ctc_batch(ctx.log_probs, ctx.targets)
    labels, skip, in_len, tg_len = _ctc_setup(xp, lp, tg, ctx.input_lengths, ctx.target_lengths, ctx.blank)
    alpha, beta, nll = _ctc_alpha_beta(xp, lp, labels, skip, in_len, tg_len)
    t_max, batch, classes = lp.shape
    both = alpha + beta                                                    # (T, N, 2S+1)
    top = both.max(axis=2, keepdims=True)
    top = xp.where(xp.isneginf(top), 0, top)
    onehot = (labels[:, :, None] == xp.arange(classes)[None, None, :]).astype(lp.dtype)   # (N, 2S+1, C)
    summed = xp.matmul(xp.exp(both - top)[:, :, None, :], onehot[None])[:, :, 0, :]     # (T, N, C)
    from .special import quiet_float_errors
    with quiet_float_errors(xp):
        grad = -xp.exp(xp.log(summed) + top + nll[None, :, None] - lp)
    running = xp.arange(t_max)[:, None, None] < in_len[None, :, None]
    grad = xp.where(running, grad, 0)
    if ctx.zero_infinity:
        grad = xp.where(xp.isfinite(nll)[None, :, None], grad, 0)
    g = xp.asarray(g, dtype=lp.dtype)
    if ctx.reduction == "none":
        per = g.reshape(-1)
    elif ctx.reduction == "sum":
        per = xp.broadcast_to(g, (batch,))
    else:
        per = g / (xp.maximum(tg_len, 1) * batch)
    grad = grad * per[None, :, None]
    return (grad.reshape(ctx.log_probs.shape),) + (None,) * 6


def _ctc_rule(lp, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    if reduction != "none":
        return TensorType(lp.dtype, (), lp.device)
    batch = None if lp.shape is None else (lp.shape[1],) if len(lp.shape) == 3 else ()
    return TensorType(lp.dtype, batch, lp.device)


register("ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor, "
         "blank: int = 0, reduction: str = 'mean', zero_infinity: bool = False) -> Tensor", OPAQUE, _ctc_kernel,
         shape=_ctc_rule, grad=_ctc_grad, save=("log_probs",), method=False, functional=True,
         doc="Connectionist temporal classification loss of (T, N, C) log-probabilities against label sequences.")
