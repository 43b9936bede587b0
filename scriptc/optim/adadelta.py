"""Adadelta (torch.optim.Adadelta): step sizes from running averages of squared gradients and updates."""

from __future__ import annotations

import numpy as np

from . import arith
from .optimizer import ParamwiseOptimizer, check_lr, check_nonnegative, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["Adadelta"]


class Adadelta(ParamwiseOptimizer):
    """Adadelta: delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g, both averages decayed by `rho`."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps, "epsilon")
        check_nonnegative(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["square_avg"] = zeros_like(param)
        state["acc_delta"] = zeros_like(param)

    def update(self, group, param, grad, state):
        rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
        next_step(state)
        if weight_decay != 0:
            grad = arith.add(grad, param, weight_decay)
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        arith.addcmul_(arith.mul_(square_avg, rho), grad, grad, 1 - rho)
        eps = param.dtype.type(eps)
        delta = np.sqrt(acc_delta + eps) / np.sqrt(square_avg + eps) * grad
        arith.addcmul_(arith.mul_(acc_delta, rho), delta, delta, 1 - rho)
        arith.add_(param, delta, -scalar_value(group["lr"]))
