"""Op-table cases for the losses, lookups and their kin (scriptc/ops/loss.py, scriptc/ops/embedding.py)."""

from __future__ import annotations

import itertools

import numpy as np

from .cases import Case, Int, _F, _log_softmax, positive, rand, rng


def _nll_ref(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    t = target.reshape(-1)
    lp = np.moveaxis(logp, 1, -1).reshape(-1, logp.shape[1]) if logp.ndim > 1 else logp[None]
    w = np.ones(lp.shape[1]) if weight is None else weight
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    per = -w[safe] * lp[np.arange(len(t)), safe] * valid
    if reduction == "none":
        return per.reshape(target.shape)
    if reduction == "sum":
        return per.sum()
    return per.sum() / (w[safe] * valid).sum()



def _ce_ref(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    lp = _log_softmax(x, 1)
    if label_smoothing == 0.0:
        return _nll_ref(lp, target, weight, ignore_index, reduction)
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    t = target.reshape(-1)
    flat = np.moveaxis(lp, 1, -1).reshape(-1, c)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    nll = -w[safe] * flat[np.arange(len(t)), safe] * valid
    smooth = -(flat * w).sum(axis=1) * valid
    per = (1 - label_smoothing) * nll + label_smoothing / c * smooth
    if reduction == "none":
        return per.reshape(target.shape)
    if reduction == "sum":
        return per.sum()
    return per.sum() / (w[safe] * valid).sum()



def _mse_ref(x, t, reduction="mean"):
    d = (x - t) ** 2
    return {"none": d, "sum": d.sum(), "mean": d.mean()}[reduction]


def _renorm_ref(weight, indices, max_norm, norm_type):
    out = weight.copy()
    for row in np.unique(indices):
        norm = np.linalg.norm(out[row], ord=norm_type)
        if norm > max_norm:
            out[row] *= max_norm / (norm + 1e-7)
    return out


def _bag_ref(weight, indices, offsets, mode="mean", per_sample_weights=None, include_last_offset=False,
             padding_idx=None):
    if offsets is None:  # each row of 2-D indices a bag
        offsets = np.arange(0, indices.size, indices.shape[1])
        indices = indices.reshape(-1)
        per_sample_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    ends = list(offsets[1:]) if include_last_offset else list(offsets[1:]) + [len(indices)]
    starts = offsets[:-1] if include_last_offset else offsets
    out = np.zeros((len(starts), weight.shape[1]))
    for b, (start, end) in enumerate(zip(starts, ends)):
        rows = [(weight[i] * (1 if per_sample_weights is None else per_sample_weights[k]))
                for k, i in zip(range(start, end), indices[start:end]) if i != padding_idx]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](rows, axis=0)
    return out


def _bce_ref(x, t, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))
    loss = loss * (1 if weight is None else weight)
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def _collapse(path, blank):
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return [c for c in merged if c != blank]


def _ctc_ref(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Sums the probability of every path by brute force (small T and C only)."""
    losses = []
    offset = 0
    for n in range(log_probs.shape[1]):
        length, count = int(input_lengths[n]), int(target_lengths[n])
        if targets.ndim == 1:
            target = list(targets[offset:offset + count])
            offset += count
        else:
            target = list(targets[n, :count])
        total = 0.0
        for path in itertools.product(range(log_probs.shape[2]), repeat=length):
            if _collapse(list(path), blank) == target:
                total += np.exp(sum(log_probs[t, n, c] for t, c in enumerate(path)))
        loss = -np.log(total) if total > 0 else np.inf
        losses.append(0.0 if zero_infinity and np.isinf(loss) else loss)
    losses = np.array(losses)
    if reduction == "mean":
        return (losses / np.maximum(np.asarray(target_lengths), 1)).mean()
    return {"none": losses, "sum": losses.sum()}[reduction]


def _ctc_inputs(steps, batch, classes):
    return _log_softmax(rand(steps, batch, classes), 2)


def _torch_ctc(torch, lp, targets, input_lengths, target_lengths, *rest):
    return torch.nn.functional.ctc_loss(lp, targets, input_lengths, target_lengths, *rest)


CASES: dict[str, list[Case]] = {
    "embedding": [Case((Int(rng.integers(0, 5, (2, 3))), rand(5, 4)), lambda i, w: w[i],
                       torch=_F("embedding")),
                  Case((Int(np.array([0, 2, 2])), rand(5, 4), 2), lambda i, w, p: w[i], torch=_F("embedding"),
                       label="padding_idx (its row gets no gradient, unlike finite differences)", grad=False)],
    "cross_entropy": [
        Case((rand(5, 4), Int(rng.integers(0, 4, (5,)))), _ce_ref,
             torch=lambda torch, x, t, *a: torch.nn.functional.cross_entropy(x, t)),
        Case((rand(5, 4), Int(np.array([0, -100, 3, 1, 2])), positive(4), -100, "sum", 0.1), _ce_ref,
             torch=lambda torch, x, t, w, i, r, s: torch.nn.functional.cross_entropy(
                 x, t, w, ignore_index=i, reduction=r, label_smoothing=s), label="weight ignore smoothing",
             nograd=(2,)),
        Case((rand(2, 3, 4), Int(rng.integers(0, 3, (2, 4))), None, -100, "none"), _ce_ref,
             torch=lambda torch, x, t, w, i, r: torch.nn.functional.cross_entropy(x, t, reduction=r),
             label="spatial")],
    "nll_loss": [Case((rand(5, 4), Int(rng.integers(0, 4, (5,)))), _nll_ref,
                      torch=lambda torch, x, t: torch.nn.functional.nll_loss(x, t)),
                 Case((rand(5, 4), Int(np.array([0, 1, -100, 3, 1])), positive(4), -100, "mean"), _nll_ref,
                      torch=lambda torch, x, t, w, i, r: torch.nn.functional.nll_loss(x, t, w, ignore_index=i,
                                                                                      reduction=r),
                      label="weight ignore", nograd=(2,))],
    "mse_loss": [Case((rand(3, 4), rand(3, 4)), _mse_ref, torch=_F("mse_loss")),
                 Case((rand(3, 4), rand(3, 4), "sum"), _mse_ref,
                      torch=lambda torch, a, b, r: torch.nn.functional.mse_loss(a, b, reduction=r), label="sum")],
    "embedding_renorm_": [
        Case((rand(5, 4) * 2, Int(np.array([[0, 2], [2, 4]])), 1.0, 2.0), _renorm_ref, grad=False,
             torch=lambda torch, w, i, m, p: torch.embedding_renorm_(w.clone(), i, m, p)),
        Case((rand(5, 4) * 2, Int(np.array([1, 3])), 1.5, 1.0), _renorm_ref, grad=False, label="norm_type 1",
             torch=lambda torch, w, i, m, p: torch.embedding_renorm_(w.clone(), i, m, p))],
    "embedding_bag": [
        Case((rand(6, 3), Int(np.array([1, 2, 4, 5, 4, 3, 2])), Int(np.array([0, 2, 2, 5]))), _bag_ref,
             torch=lambda torch, w, i, o: torch.nn.functional.embedding_bag(i, w, o), label="mean with an empty bag"),
        Case((rand(6, 3), Int(np.array([1, 2, 4, 5, 4])), Int(np.array([0, 3])), "sum", rand(5)), _bag_ref,
             torch=lambda torch, w, i, o, m, psw: torch.nn.functional.embedding_bag(i, w, o, mode=m,
                                                                                   per_sample_weights=psw),
             label="sum per_sample_weights"),
        Case((rand(6, 3), Int(np.array([1, 2, 4, 5, 0, 3])), Int(np.array([0, 2, 6])), "max", None, True), _bag_ref,
             torch=lambda torch, w, i, o, m, psw, last: torch.nn.functional.embedding_bag(
                 i, w, o, mode=m, include_last_offset=last), label="max include_last_offset"),
        Case((rand(6, 3), Int(np.array([1, 2, 4, 2, 2])), Int(np.array([0, 2])), "mean", None, False, 2), _bag_ref,
             torch=lambda torch, w, i, o, m, psw, last, pad: torch.nn.functional.embedding_bag(
                 i, w, o, mode=m, padding_idx=pad), label="padding_idx"),
        Case((rand(6, 3), Int(np.array([[1, 2, 4], [5, 0, 3]])), None, "sum", rand(2, 3)), _bag_ref,
             torch=lambda torch, w, i, o, m, psw: torch.nn.functional.embedding_bag(i, w, o, mode=m,
                                                                                   per_sample_weights=psw),
             label="rows of 2-D indices as bags")],
    "binary_cross_entropy": [
        Case((rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4))), _bce_ref),
        Case((rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4)), positive(4), "sum"), _bce_ref,
             torch=lambda torch, x, t, w, r: torch.nn.functional.binary_cross_entropy(x, t, w, reduction=r),
             nograd=(2,), label="weight sum"),
        Case((np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5]), None, "none"), _bce_ref, grad=False,
             torch=lambda torch, x, t, w, r: torch.nn.functional.binary_cross_entropy(x, t, reduction=r),
             label="certain mistakes cost 100")],
    "ctc_loss": [
        Case((_ctc_inputs(5, 2, 3), Int(np.array([[1, 2], [2, 2]])), Int(np.array([5, 4])), Int(np.array([2, 2]))),
             _ctc_ref, torch=_torch_ctc, torch_grad=False, rtol=1e-4, atol=1e-4, label="padded targets"),
        Case((_ctc_inputs(4, 2, 3), Int(np.array([1, 1, 2])), Int(np.array([4, 3])), Int(np.array([2, 1])), 0, "sum"),
             _ctc_ref, torch=_torch_ctc, torch_grad=False, rtol=1e-4, atol=1e-4, label="concatenated targets sum"),
        Case((_ctc_inputs(4, 2, 3), Int(np.array([[1, 1, 2], [2, 1, 1]])), Int(np.array([4, 2])),
              Int(np.array([3, 3])), 0, "none", True), _ctc_ref, torch=_torch_ctc, torch_grad=False,
             label="zero_infinity"),
        Case((_ctc_inputs(4, 1, 3), Int(np.array([[0, 1]])), Int(np.array([4])), Int(np.array([2])), 2), _ctc_ref,
             torch=_torch_ctc, torch_grad=False, rtol=1e-4, atol=1e-4, label="blank 2")],
}
