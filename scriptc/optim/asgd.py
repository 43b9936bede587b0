"""ASGD (torch.optim.ASGD): SGD with a decaying step size and a running average of the iterates."""

from __future__ import annotations

from . import arith
from .optimizer import ParamwiseOptimizer, check_lr, check_nonnegative, next_step, scalar_tensor, scalar_value, zeros_like

__all__ = ["ASGD"]


class ASGD(ParamwiseOptimizer):
    """Averaged SGD: p = p * (1 - lambd * eta) - eta * g; `ax` averages the iterates from step t0 on;
    eta = lr / (1 + lambd * lr * t)^alpha."""

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        check_lr(lr)
        check_nonnegative(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def init_state(self, group, param, state):
        state["step"] = scalar_tensor(0.0)
        state["eta"] = scalar_tensor(scalar_value(group["lr"]))
        state["mu"] = scalar_tensor(1.0)
        state["ax"] = zeros_like(param)

    def update(self, group, param, grad, state):
        lambd, lr = group["lambd"], scalar_value(group["lr"])
        step = next_step(state)
        if group["weight_decay"] != 0:
            grad = arith.add(grad, param, group["weight_decay"])
        eta, mu, ax = state["eta"]._data, state["mu"]._data, state["ax"]._data
        eta_value = float(eta)
        arith.mul_(param, 1 - lambd * eta_value)
        arith.add_(param, grad, -eta_value)
        if float(mu) != 1:
            ax += (param - ax) * mu
        else:
            ax[...] = param
        eta[...] = lr / (1 + lambd * lr * step) ** group["alpha"]
        mu[...] = 1 / max(1, step - group["t0"])
