"""RAdam (torch.optim.RAdam): Adam whose adaptive step is rectified while its variance is unreliable."""

from __future__ import annotations

import numpy as np

from . import arith
from .optimizer import (
    ParamwiseOptimizer,
    check_betas,
    check_lr,
    check_nonnegative,
    next_step,
    scalar_tensor,
    scalar_value,
    zeros_like,
)

__all__ = ["RAdam"]


class RAdam(ParamwiseOptimizer):
    """RAdam: while the length of the approximated simple moving average rho_t is at most 5 the step
    is plain momentum SGD; after that, Adam's step scaled by the rectification term."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        check_lr(lr)
        check_nonnegative(eps, "epsilon")
        check_betas(betas)
        check_nonnegative(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)

    def update(self, group, param, grad, state):
        lr, weight_decay = scalar_value(group["lr"]), group["weight_decay"]
        beta1, beta2 = group["betas"]
        step = next_step(state)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                arith.mul_(param, 1 - lr * weight_decay)
            else:
                grad = arith.add(grad, param, weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        arith.lerp_(exp_avg, grad, 1 - beta1)
        arith.addcmul_(arith.mul_(exp_avg_sq, beta2), grad, grad, 1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        scalar = param.dtype.type
        update = exp_avg / scalar(bias_correction1) * scalar(lr)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            root = np.sqrt(exp_avg_sq)
            root += scalar(group["eps"])
            update = update * (scalar(bias_correction2 ** 0.5) / root) * scalar(rect)
        param -= update
