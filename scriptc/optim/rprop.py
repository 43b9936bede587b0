"""Rprop (torch.optim.Rprop): per-element step sizes that grow or shrink with the gradient's sign."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import wrap

from .optimizer import ParamwiseOptimizer, check_lr, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["Rprop"]


class Rprop(ParamwiseOptimizer):
    """Resilient backpropagation: where the gradient keeps its sign the step size grows by etas[1],
    where it flips the step shrinks by etas[0] and that element skips one update; step sizes stay
    within `step_sizes`."""

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["prev"] = zeros_like(param)
        state["step_size"] = wrap(np.full_like(param._data, scalar_value(group["lr"])))

    def update(self, group, param, grad, state):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        next_step(state)
        prev, step_size = state["prev"]._data, state["step_size"]._data
        sign = np.sign(grad * prev)
        factor = np.where(sign > 0, etaplus, np.where(sign < 0, etaminus, 1)).astype(param.dtype)
        np.clip(step_size * factor, step_size_min, step_size_max, out=step_size)
        grad = np.where(factor == param.dtype.type(etaminus), 0, grad).astype(param.dtype)
        param -= np.sign(grad) * step_size
        prev[...] = grad
