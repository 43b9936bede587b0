"""LRScheduler: the base of every learning-rate schedule (torch.optim.lr_scheduler.LRScheduler).

A scheduler writes each parameter group's `lr` on every `step()`. Most schedules are chainable:
`get_lr()` derives the next rate from the group's current one, so schedulers stacked on one
optimizer compose, and values equal torch's step by step because the same formulas run in the
same order. `state_dict()` is the scheduler's attributes under torch's names.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any

from scriptc.tensors import Tensor

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def format_param(name: str, optimizer: Optimizer, param) -> list:
    """One value per parameter group: a list of them as given, or the single value repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
        return [p.clone() if isinstance(p, Tensor) else p for p in param]
    return [param.clone() if isinstance(param, Tensor) else param] * len(optimizer.param_groups)


def group_values(optimizer: Optimizer, key: str) -> list:
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def set_group_value(group: dict, key: str, value) -> None:
    """Write a rate into a group, in place when the group holds it as a tensor."""
    if isinstance(group[key], Tensor):
        group[key].fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def cycle_momentum_setup(optimizer: Optimizer, base_momentum, max_momentum, last_epoch: int):
    """CyclicLR and OneCycleLR cycle SGD's `momentum` or Adam's beta1: returns (whether it is beta1,
    the base momenta, the max momenta), and on a fresh start sets each group's to its max."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    use_beta1 = "betas" in optimizer.defaults
    base_momentums = format_param("base_momentum", optimizer, base_momentum)
    max_momentums = format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for high, low, group in zip(max_momentums, base_momentums, optimizer.param_groups):
            set_momentum(group, high, use_beta1)
            group["max_momentum"] = high
            group["base_momentum"] = low
    return use_beta1, base_momentums, max_momentums


def set_momentum(group: dict, momentum, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


class LRScheduler:
    """Base class: `step()` advances `last_epoch` and writes `get_lr()` into the optimizer's groups.

    Subclasses set their options, then call `super().__init__(optimizer, last_epoch)`, which
    records each group's `initial_lr` (or, resuming with last_epoch >= 0, requires it) and takes
    the first step.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial = group["lr"]
                group.setdefault("initial_lr", initial.clone() if isinstance(initial, Tensor) else initial)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from a "
                        "checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch >= 0 "
                        "for a fresh training run (not recommended)")
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The rates the last step() wrote, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The rates for the current `last_epoch` (called by step())."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to `epoch`, deprecated) and update the groups' learning rates."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
                              "and later, you should call them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                              "value of the learning rate schedule. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")

    def _warn_if_called_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)


_LRScheduler = LRScheduler


def _track_step_called(optimizer: Optimizer) -> None:
    """Wrap the optimizer's bound `step` so the scheduler can tell whether it ran before its own first step."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    optimizer_ref = weakref.ref(optimizer)
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = optimizer_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper
