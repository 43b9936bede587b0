"""Adam, with amsgrad, maximize and L2 or decoupled weight decay (torch.optim.Adam)."""

from __future__ import annotations


import numpy as np

from . import arith
from .optimizer import (
    ParamwiseOptimizer,
    check_betas,
    check_fused,
    check_lr,
    check_nonnegative,
    next_step,
    scalar_tensor,
    scalar_value,
    zeros_like,
)

__all__ = ["Adam"]


class Adam(ParamwiseOptimizer):
    """Adam: bias-corrected running averages of the gradient and its square; `weight_decay` is added
    to the gradient (L2), or taken from the parameter directly with `decoupled_weight_decay=True`."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        check_lr(lr)
        check_nonnegative(eps, "epsilon")
        check_betas(betas)
        check_nonnegative(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))
        check_fused(self, fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for name, default in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                                  ("differentiable", False), ("decoupled_weight_decay", False), ("fused", None)):
                group.setdefault(name, default)

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(param)

    def update(self, group, param, grad, state):
        lr, weight_decay, eps = scalar_value(group["lr"]), group["weight_decay"], group["eps"]
        beta1, beta2 = (scalar_value(b) for b in group["betas"])
        step = next_step(state)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                arith.mul_(param, 1 - lr * weight_decay)
            else:
                grad = arith.add(grad, param, weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        arith.lerp_(exp_avg, grad, 1 - beta1)
        arith.addcmul_(arith.mul_(exp_avg_sq, beta2), grad, grad, 1 - beta2)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]._data
            np.maximum(second_moment, exp_avg_sq, out=second_moment)
        else:
            second_moment = exp_avg_sq
        denom = arith.div(np.sqrt(second_moment), bias_correction2_sqrt)
        denom += denom.dtype.type(eps)
        arith.addcdiv_(param, exp_avg, denom, -step_size)
