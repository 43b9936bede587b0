"""RMSprop (torch.optim.RMSprop): steps scaled by a running average of squared gradients."""

from __future__ import annotations

import numpy as np

from . import arith
from .optimizer import ParamwiseOptimizer, check_lr, check_nonnegative, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["RMSprop"]


class RMSprop(ParamwiseOptimizer):
    """RMSprop: square_avg = alpha * square_avg + (1 - alpha) * g^2; p -= lr * g / (sqrt(square_avg) + eps),
    `centered` subtracting the squared running mean of g, `momentum` accumulating the steps."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        check_lr(lr)
        check_nonnegative(eps, "epsilon")
        check_nonnegative(momentum, "momentum")
        check_nonnegative(weight_decay, "weight_decay")
        check_nonnegative(alpha, "alpha")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["square_avg"] = zeros_like(param)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = zeros_like(param)

    def update(self, group, param, grad, state):
        alpha, lr, momentum = group["alpha"], scalar_value(group["lr"]), group["momentum"]
        next_step(state)
        if group["weight_decay"] != 0:
            grad = arith.add(grad, param, group["weight_decay"])
        square_avg = state["square_avg"]._data
        arith.addcmul_(arith.mul_(square_avg, alpha), grad, grad, 1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]._data
            arith.lerp_(grad_avg, grad, 1 - alpha)
            avg = np.sqrt(arith.addcmul_(square_avg.copy(), grad_avg, grad_avg, -1))
        else:
            avg = np.sqrt(square_avg)
        avg += avg.dtype.type(group["eps"])
        if momentum > 0:
            buffer = state["momentum_buffer"]._data
            arith.addcdiv_(arith.mul_(buffer, momentum), grad, avg)
            arith.add_(param, buffer, -lr)
        else:
            arith.addcdiv_(param, grad, avg, -lr)
