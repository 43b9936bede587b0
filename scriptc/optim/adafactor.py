"""Adafactor (torch.optim.Adafactor): Adam's second moment kept as row and column averages of the last two
dims (factored), with a relative step size and the update's RMS clipped to d."""

from __future__ import annotations

import math

import numpy as np

from . import arith
from .optimizer import ParamwiseOptimizer, check_lr, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["Adafactor"]


class Adafactor(ParamwiseOptimizer):
    """Adafactor: rho = min(lr, 1/sqrt(t)); alpha = max(eps2, RMS(p)) * rho; the squared gradient's running
    average (decay 1 - t^beta2_decay) per row and per column of matrices (whole for vectors);
    p -= alpha / max(1, RMS(u) / d) * u with u = g / sqrt(variance estimate)."""

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach=None, maximize: bool = False):
        check_lr(lr)
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def init_state(self, group, param, state):
        if param.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        state["step"] = scalar_tensor(0.0)
        if param.dim() > 1:
            state["row_var"] = param.new_zeros(tuple(param.shape[:-1]) + (1,))
            state["col_var"] = param.new_zeros(tuple(param.shape[:-2]) + (1, param.shape[-1]))
        else:
            state["variance"] = zeros_like(param)

    def update(self, group, param, grad, state):
        lr = scalar_value(group["lr"])
        step = next_step(state)
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype).eps)
        decay = step ** group["beta2_decay"]
        rho = min(lr, 1 / math.sqrt(step))
        alpha = max(eps2, float(np.linalg.norm(param.ravel())) / math.sqrt(param.size)) * rho
        if group["weight_decay"] != 0:
            arith.mul_(param, 1 - lr * group["weight_decay"])
        if grad.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            arith.lerp_(row_var, np.square(grad).mean(axis=-1, keepdims=True, dtype=grad.dtype), decay)
            arith.lerp_(col_var, np.square(grad).mean(axis=-2, keepdims=True, dtype=grad.dtype), decay)
            estimate = (row_var @ col_var) / np.maximum(row_var.mean(axis=-2, keepdims=True), eps1)
        else:
            variance = state["variance"]._data
            arith.lerp_(variance, grad * grad, decay)
            estimate = variance.copy()
        update = grad / np.sqrt(np.maximum(estimate, param.dtype.type(eps1 * eps1)))
        denom = max(1.0, float(np.linalg.norm(update.ravel())) / (math.sqrt(update.size) * group["d"]))
        arith.add_(param, update, -alpha / denom)
