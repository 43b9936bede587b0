"""Adagrad (torch.optim.Adagrad): per-element step sizes from the sum of squared gradients."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import wrap

from . import arith
from .optimizer import ParamwiseOptimizer, check_fused, check_lr, check_nonnegative, next_step, scalar_tensor, scalar_value

__all__ = ["Adagrad"]


class Adagrad(ParamwiseOptimizer):
    """Adagrad: p -= clr * g / (sqrt(sum of g^2) + eps), with clr = lr / (1 + (step - 1) * lr_decay).

    Like torch, every parameter's state (`step`, `sum` filled with `initial_accumulator_value`)
    exists from construction.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        check_lr(lr)
        check_nonnegative(lr_decay, "lr_decay")
        check_nonnegative(weight_decay, "weight_decay")
        check_nonnegative(initial_accumulator_value, "initial_accumulator_value")
        check_nonnegative(eps, "epsilon")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        check_fused(self, fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self.init_state(group, p, self.state[p])

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["sum"] = wrap(np.full_like(param._data, self.defaults["initial_accumulator_value"]))

    def update(self, group, param, grad, state):
        step = next_step(state)
        if group["weight_decay"] != 0:
            grad = arith.add(grad, param, group["weight_decay"])
        clr = scalar_value(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]._data
        arith.addcmul_(state_sum, grad, grad, 1)
        std = np.sqrt(state_sum)
        std += std.dtype.type(group["eps"])
        arith.addcdiv_(param, grad, std, -clr)
