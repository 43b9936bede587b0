"""Optimizer: parameter groups, per-parameter state, step hooks and torch's state_dict layout."""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Iterable

import numpy as np

from scriptc.autograd import enable_grad, no_grad
from scriptc.tensors import Tensor, wrap
from scriptc.types import float32
from scriptc.utils.hooks import RemovableHandle
from scriptc.tensor_functions import typename

from . import arith

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    """The default of an option every parameter group must set (SGD's lr in older torch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()
_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]
_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(optimizer, args, kwargs)` before every optimizer's step; it may return new (args, kwargs)."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(optimizer, args, kwargs)` after every optimizer's step."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def scalar_value(x) -> float:
    """A hyper-parameter given as a number or a one-element tensor, as a Python number."""
    return x.item() if isinstance(x, Tensor) else x


def check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= scalar_value(lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def check_nonnegative(value, what: str) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what} value: {value}")


def check_betas(betas) -> None:
    for i in (0, 1):
        if not 0.0 <= scalar_value(betas[i]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_adam_options(lr, betas, eps, weight_decay) -> None:
    """The checks every Adam-family optimizer makes on its options, with torch's messages."""
    check_lr(lr)
    check_nonnegative(eps, "epsilon")
    check_betas(betas)
    check_nonnegative(weight_decay, "weight_decay")


def scalar_tensor(value: float) -> Tensor:
    """A 0-d float32 tensor: how torch keeps `step` (and NAdam's mu_product, ASGD's eta and mu)."""
    return wrap(np.array(value, dtype=float32.np))


def zeros_like(p: Tensor) -> Tensor:
    return wrap(np.zeros_like(p._data))


def init_moments(state: dict, param: Tensor) -> None:
    """Adam-family state: the step count and the running averages of the gradient and its square."""
    state["step"] = scalar_tensor(0.0)
    state["exp_avg"] = zeros_like(param)
    state["exp_avg_sq"] = zeros_like(param)


def decay_weights(group: dict, param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """Weight decay as the Adam family applies it: shrink the parameter when decoupled, else add
    `weight_decay * param` to the gradient. Returns the gradient to use."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grad
    if group.get("decoupled_weight_decay"):
        arith.mul_(param, 1 - lr * weight_decay)
        return grad
    return arith.add(grad, param, weight_decay)


def update_moments(state: dict, grad: np.ndarray, beta1: float, beta2: float) -> tuple[np.ndarray, np.ndarray]:
    """exp_avg += (1 - beta1) * (grad - exp_avg); exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2."""
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    arith.lerp_(exp_avg, grad, 1 - beta1)
    arith.addcmul_(arith.mul_(exp_avg_sq, beta2), grad, grad, 1 - beta2)
    return exp_avg, exp_avg_sq


def next_step(state: dict) -> float:
    """Count this step in `state['step']` (a 0-d tensor, as torch keeps it) and return the new count."""
    state["step"]._data += 1
    return float(state["step"]._data)


def _hooked_step(step):
    """Wrap a class's `step` so the global and per-optimizer pre/post hooks run around it."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        out = step(self, *args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class Optimizer:
    """Base class of every optimizer (torch.optim.Optimizer).

    `params` is an iterable of tensors, of (name, tensor) pairs, or of dicts that each define a
    parameter group with its own options; `defaults` holds the options a group does not set.
    `state[param]` is that parameter's state; `state_dict()` keys it by the parameter's position.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("step_pre", "step_post", "state_dict_pre", "state_dict_post", "load_state_dict_pre",
                     "load_state_dict_post"):
            self.__dict__.setdefault(f"_optimizer_{name}_hooks", OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # --- parameter groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to `param_groups`."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + typename(param))
            if not self.defaults.get("differentiable") and not (param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        existing = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if existing.intersection(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's `.grad`: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def step(self, closure: Callable | None = None):
        """Update the parameters once; `closure` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    # --- hooks ----------------------------------------------------------------------------------
    def _register(self, hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs before each step and may return new (args, kwargs)."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs after each step."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # --- state_dict -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{'state': {param index: {name: value}}, 'param_groups': [options with 'params' as indices]},
        torch's layout: a torch optimizer's state dict (tensors as numpy arrays or tensors) loads here."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            returned = hook(self, result)
            if returned is not None:
                result = returned
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict from `state_dict()` (ours or torch's): groups must match in number and size."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            returned = hook(self, state_dict)
            if returned is not None:
                state_dict = returned
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {name: _cast_state(param, v, name) for name, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _cast_state(param: Tensor, value, key=None):
    """A loaded state value as this optimizer keeps it: arrays become tensors, and tensors other than
    `step` take the parameter's floating dtype (torch's rule)."""
    if isinstance(value, np.ndarray):
        value = wrap(value)
    if isinstance(value, Tensor):
        if key != "step" and param.is_floating_point() and value.dtype is not param.dtype:
            return value.to(param.dtype)
        return value
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


class ParamwiseOptimizer(Optimizer):
    """An optimizer whose step updates each parameter from its gradient and its own state.

    Subclasses give `init_state(group, param, state)` (run on a parameter's first step) and
    `update(group, param, grad, state)`, which changes the numpy arrays in place: `param` is the
    parameter's data, `grad` its gradient (negated when the group maximizes).
    """

    uses_capturable = False

    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns `closure()`'s loss when given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._check_group(group)
                for p in group["params"]:
                    if p.grad is None or p.is_meta:  # (a meta parameter has no values to update)
                        continue
                    state = self.state[p] if self.keeps_state(group) else {}
                    if not state:
                        if group.get("fused"):
                            _check_fusable(p)
                        self.init_state(group, p, state)
                    grad = p.grad._data
                    self.update(group, p._data, -grad if group.get("maximize") else grad, state)
                    p._vc[0] += 1
        return loss

    def _check_group(self, group: dict) -> None:
        if group.get("capturable"):
            raise AssertionError("If capturable=True, params and state_steps must be on supported devices: "
                                 f"{_CAPTURABLE_DEVICES}.")
        if group.get("differentiable"):
            raise RuntimeError(f"{type(self).__name__}(differentiable=True) is not supported by scriptc: the update "
                               "is not recorded by autograd")

    def keeps_state(self, group: dict) -> bool:
        """Whether this group's parameters get an entry in `state` (SGD without momentum has none)."""
        return True

    def init_state(self, group: dict, param: Tensor, state: dict) -> None:
        raise NotImplementedError

    def update(self, group: dict, param: np.ndarray, grad: np.ndarray, state: dict) -> None:
        raise NotImplementedError


def _check_fusable(p: Tensor) -> None:
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{_FUSED_DEVICES} but {p.dtype} and cpu")


def check_fused(optimizer: Optimizer, fused, foreach, differentiable) -> None:
    """torch's checks on `fused=True` at construction."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
