"""Optimizers: parameter groups, state, and the update formulas of torch.optim (for-loop variants)."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from scriptc.tensors import Tensor


class Optimizer:
    """Holds param_groups (dicts of params and hyper-parameters) and per-parameter state."""

    def __init__(self, params: Iterable, defaults: dict):
        self.defaults = defaults
        self.state: dict = {}
        self.param_groups: list[dict] = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    def state_dict(self) -> dict:
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        return {"state": {index[k]: {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in s.items()}
                          for k, s in self.state.items()},
                "param_groups": [{**{k: v for k, v in g.items() if k != "params"},
                                  "params": [index[id(p)] for p in g["params"]]} for g in self.param_groups]}

    def load_state_dict(self, state_dict: dict) -> None:
        params = [p for g in self.param_groups for p in g["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {id(params[i]): {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in s.items()}
                      for i, s in state_dict["state"].items()}

    def _params_with_grad(self, group):
        for p in group["params"]:
            if p.grad is not None:
                yield p._data, p.grad._data, self.state.setdefault(id(p), {})

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from scriptc.autograd import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._update(group)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p._vc[0] += 1
        return loss

    def _update(self, group: dict) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, nesterov and weight_decay (torch.optim.SGD)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, group):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        for data, grad, state in self._params_with_grad(group):
            d_p = -grad if maximize else grad
            if weight_decay != 0:
                d_p = d_p + weight_decay * data
            if momentum != 0:
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = np.array(d_p, copy=True)
                    state["momentum_buffer"] = buf
                else:
                    buf *= momentum
                    buf += (1 - dampening) * d_p
                d_p = d_p + momentum * buf if nesterov else buf
            data -= lr * d_p


class Adam(Optimizer):
    """Adam (torch.optim.Adam): bias-corrected moments; weight_decay is L2 added to the gradient."""

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        for data, grad, state in self._params_with_grad(group):
            if maximize:
                grad = -grad
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros_like(data)
                state["exp_avg_sq"] = np.zeros_like(data)
                if amsgrad:
                    state["max_exp_avg_sq"] = np.zeros_like(data)
            state["step"] += 1
            step = state["step"]
            if weight_decay != 0:
                if self.decoupled:
                    data *= 1 - lr * weight_decay
                else:
                    grad = grad + weight_decay * data
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg += (grad - exp_avg) * (1 - beta1)
            exp_avg_sq *= beta2
            exp_avg_sq += (1 - beta2) * grad * grad
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = math.sqrt(bias_correction2)
            if amsgrad:
                np.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                denom = np.sqrt(state["max_exp_avg_sq"]) / bias_correction2_sqrt + eps
            else:
                denom = np.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
            data -= step_size * (exp_avg / denom)


class AdamW(Adam):
    """AdamW (torch.optim.AdamW): Adam with decoupled weight decay (default 0.01)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
