"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (torch.optim.SGD)."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import wrap

from . import arith
from .optimizer import ParamwiseOptimizer, check_fused, check_lr, scalar_value

__all__ = ["SGD"]


class SGD(ParamwiseOptimizer):
    """Stochastic gradient descent: p -= lr * g, where g adds `weight_decay * p` and, with momentum,
    is the buffer `b = momentum * b + (1 - dampening) * g` (or `g + momentum * b` with nesterov)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None):
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if scalar_value(weight_decay) < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))
        check_fused(self, fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for name, default in (("nesterov", False), ("maximize", False), ("foreach", None),
                                  ("differentiable", False), ("fused", False)):
                group.setdefault(name, default)

    def keeps_state(self, group):
        return group["momentum"] != 0

    def init_state(self, group, param, state):
        state["momentum_buffer"] = None

    def update(self, group, param, grad, state):
        weight_decay, momentum = scalar_value(group["weight_decay"]), group["momentum"]
        if weight_decay != 0:
            grad = arith.add(grad, param, weight_decay)
        if momentum != 0:
            buffer = state["momentum_buffer"]
            if buffer is None:
                buffer = wrap(np.array(grad, copy=True))
                state["momentum_buffer"] = buffer
            else:
                arith.add_(arith.mul_(buffer._data, momentum), grad, 1 - group["dampening"])
            grad = arith.add(grad, buffer._data, momentum) if group["nesterov"] else buffer._data
        arith.add_(param, grad, -scalar_value(group["lr"]))
