"""Adam, with amsgrad, maximize and L2 or decoupled weight decay (torch.optim.Adam)."""

from __future__ import annotations


import numpy as np

from . import arith
from .optimizer import (
    ParamwiseOptimizer,
    check_adam_options,
    check_fused,
    decay_weights,
    init_moments,
    next_step,
    scalar_value,
    update_moments,
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
        check_adam_options(lr, betas, eps, weight_decay)
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
        init_moments(state, param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(param)

    def update(self, group, param, grad, state):
        lr = scalar_value(group["lr"])
        beta1, beta2 = (scalar_value(b) for b in group["betas"])
        step = next_step(state)
        grad = decay_weights(group, param, grad, lr)
        exp_avg, exp_avg_sq = update_moments(state, grad, beta1, beta2)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]._data
            np.maximum(second_moment, exp_avg_sq, out=second_moment)
        else:
            second_moment = exp_avg_sq
        denom = arith.div(np.sqrt(second_moment), bias_correction2_sqrt)
        denom += denom.dtype.type(group["eps"])
        arith.addcdiv_(param, exp_avg, denom, -step_size)
