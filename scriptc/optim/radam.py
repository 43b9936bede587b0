"""RAdam (torch.optim.RAdam): Adam whose adaptive step is rectified while its variance is unreliable."""

from __future__ import annotations

import numpy as np

from .optimizer import (
    ParamwiseOptimizer,
    check_adam_options,
    decay_weights,
    init_moments,
    next_step,
    scalar_value,
    update_moments,
)

__all__ = ["RAdam"]


class RAdam(ParamwiseOptimizer):
    """RAdam: while the length of the approximated simple moving average rho_t is at most 5 the step
    is plain momentum SGD; after that, Adam's step scaled by the rectification term."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        check_adam_options(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    def init_state(self, group, param, state):
        init_moments(state, param)

    def update(self, group, param, grad, state):
        lr = scalar_value(group["lr"])
        beta1, beta2 = group["betas"]
        step = next_step(state)
        grad = decay_weights(group, param, grad, lr)
        exp_avg, exp_avg_sq = update_moments(state, grad, beta1, beta2)
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
