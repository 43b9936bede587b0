"""NAdam (torch.optim.NAdam): Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

import numpy as np

from . import arith
from .optimizer import (
    ParamwiseOptimizer,
    check_adam_options,
    check_nonnegative,
    decay_weights,
    init_moments,
    next_step,
    scalar_tensor,
    scalar_value,
    update_moments,
)

__all__ = ["NAdam"]


class NAdam(ParamwiseOptimizer):
    """NAdam: mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)); the update mixes the gradient and
    the first moment, each bias-corrected with the running product of the mu_t (`mu_product`)."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        check_adam_options(lr, betas, eps, weight_decay)
        check_nonnegative(momentum_decay, "momentum_decay")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def init_state(self, group, param, state):
        init_moments(state, param)
        state["mu_product"] = scalar_tensor(1.0)

    def update(self, group, param, grad, state):
        lr, momentum_decay = scalar_value(group["lr"]), group["momentum_decay"]
        beta1, beta2 = group["betas"]
        step = next_step(state)
        bias_correction2 = 1 - beta2 ** step
        grad = decay_weights(group, param, grad, lr)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product_tensor = state["mu_product"]._data
        mu_product_tensor *= mu_product_tensor.dtype.type(mu)
        mu_product = float(mu_product_tensor)
        exp_avg, exp_avg_sq = update_moments(state, grad, beta1, beta2)
        denom = np.sqrt(exp_avg_sq / exp_avg_sq.dtype.type(bias_correction2))
        denom += denom.dtype.type(group["eps"])
        arith.addcdiv_(param, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
        arith.addcdiv_(param, exp_avg, denom, -lr * mu_next / (1.0 - mu_product * mu_next))
