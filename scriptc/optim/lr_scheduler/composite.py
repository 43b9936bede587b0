"""Schedulers made of schedulers: SequentialLR (one after another) and ChainedScheduler (all at once)."""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from ..optimizer import Optimizer
from .base import LRScheduler, group_values, set_group_value
from .plateau import ReduceLROnPlateau


def _check_schedulers(owner: str, schedulers, optimizer, what: str) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler{what}, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs "
                             f"to be specified when calling `step`, but got one at index {i} in the given schedulers "
                             "sequence.")
        if optimizer != scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {i} has {scheduler.optimizer}, which is different "
                             f"from {type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """The state of a composite is its own attributes plus each inner scheduler's state_dict."""

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


class SequentialLR(_Composite):
    """Run `schedulers[i]` from `milestones[i-1]` on; each starts from its own epoch 0 at its milestone."""

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list[int], last_epoch: int = -1) -> None:
        _check_schedulers(type(self).__name__, schedulers, optimizer, "")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # each inner scheduler stepped once when it was built: start over from the initial rates
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Take one epoch back from every scheduler inside (their construction's step)."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in order on each step(), so their (chainable) changes compose."""

    def __init__(self, schedulers: Sequence, optimizer: Optimizer | None = None) -> None:
        optimizer = optimizer or (schedulers[0].optimizer if schedulers else None)
        _check_schedulers(type(self).__name__, schedulers, optimizer, " to be chained")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")
