"""Adamax (torch.optim.Adamax): Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

import numpy as np

from . import arith
from .optimizer import ParamwiseOptimizer, check_adam_options, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["Adamax"]


class Adamax(ParamwiseOptimizer):
    """Adamax: exp_inf = max(beta2 * exp_inf, |g| + eps); p -= lr / (1 - beta1^t) * exp_avg / exp_inf."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        check_adam_options(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_inf"] = zeros_like(param)

    def update(self, group, param, grad, state):
        beta1, beta2 = group["betas"]
        step = next_step(state)
        if group["weight_decay"] != 0:
            grad = arith.add(grad, param, group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        arith.lerp_(exp_avg, grad, 1 - beta1)
        bounded = np.abs(grad)
        bounded += bounded.dtype.type(group["eps"])
        np.maximum(arith.mul_(exp_inf, beta2), bounded, out=exp_inf)
        clr = scalar_value(group["lr"]) / (1 - beta1 ** step)
        arith.addcdiv_(param, exp_avg, exp_inf, -clr)
