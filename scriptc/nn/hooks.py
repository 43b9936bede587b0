"""Hook handles and the full backward hooks of Modules (torch.utils.hooks' RemovableHandle and BackwardHook).

A module with backward hooks routes its tensor inputs and outputs through two
identity autograd Nodes made here: the one on the outputs sees grad_output
(and runs the backward pre-hooks), the one on the inputs sees grad_input (and
runs the backward hooks) - each once per backward, with every tensor at once.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

import numpy as np

from scriptc import autograd
from scriptc.tensors import Tensor, wrap

_ids = itertools.count()


class RemovableHandle:
    """Returned by register_*_hook: `handle.remove()` (or leaving a `with handle:` block) unregisters it."""

    def __init__(self, hooks_dict: dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)
        extra = [] if extra_dict is None else (extra_dict if isinstance(extra_dict, list) else [extra_dict])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _IdentityGrad:
    """Stands in for an op in an autograd Node: passes gradients through, after `on_grads` sees them."""

    save: tuple = ()
    arg_index: dict = {}

    def __init__(self, name: str, on_grads: Callable[[tuple], tuple]):
        self.name = name
        self.on_grads = on_grads

    def grad(self, ctx, grads):
        return self.on_grads(grads if isinstance(grads, tuple) else (grads,))


def _route(tensors: list[Tensor], name: str, on_grads: Callable[[tuple], tuple]) -> list[Tensor]:
    """New tensors sharing the data of `tensors`, whose gradients flow back through `on_grads`."""
    op = _IdentityGrad(name, on_grads)
    node = autograd.record(op, (), list(tensors), tuple(t._data for t in tensors), None, np)
    routed = []
    for i, t in enumerate(tensors):
        out = wrap(t._data)
        out.requires_grad, out.grad_fn, out._out_index = True, node, i
        routed.append(out)
    return routed


def _as_tensors(grads) -> tuple:
    return tuple(None if g is None else wrap(g) for g in grads)


class BackwardHook:
    """The backward hooks of one module call (torch.utils.hooks.BackwardHook)."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.n_inputs = 0
        self.input_routed = False
        self.grad_outputs: tuple | None = None

    def setup_input_hook(self, args: tuple) -> tuple:
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(positions)
        wanted = [i for i in positions if args[i].requires_grad and autograd.is_grad_enabled()]
        if not wanted:
            return args
        self.input_routed = True
        slots = [positions.index(i) for i in wanted]

        def on_grads(grads: tuple) -> tuple:
            grad_input = [None] * self.n_inputs
            for slot, g in zip(slots, grads):
                grad_input[slot] = wrap(g)
            grad_input = tuple(grad_input)
            for hook in self.hooks:
                result = hook(self.module, grad_input, self.grad_outputs)
                if result is None:
                    continue
                if len(result) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(result)}, but expected {len(grad_input)}")
                grad_input = tuple(result)
            return tuple(None if grad_input[s] is None else grad_input[s]._data for s in slots)

        routed = _route([args[i] for i in wanted], "backward_hook_function", on_grads)
        out = list(args)
        for i, t in zip(wanted, routed):
            out[i] = t
        return tuple(out)

    def setup_output_hook(self, result: Any) -> Any:
        single = isinstance(result, Tensor)
        items = [result] if single else list(result) if isinstance(result, tuple) else None
        if items is None:
            return result
        wanted = [i for i, r in enumerate(items) if isinstance(r, Tensor) and r.requires_grad]
        if not wanted:
            return result

        def on_grads(grads: tuple) -> tuple:
            grad_output = _as_tensors(grads)
            for hook in self.pre_hooks:
                changed = hook(self.module, grad_output)
                if changed is not None:
                    grad_output = tuple(changed) if isinstance(changed, (tuple, list)) else (changed,)
            self.grad_outputs = grad_output
            if not self.input_routed:
                nothing = (None,) * self.n_inputs
                for hook in self.hooks:
                    result = hook(self.module, nothing, grad_output)
                    if result is not None and not all(r is None for r in result):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
            return tuple(None if g is None else g._data for g in grad_output)

        routed = _route([items[i] for i in wanted], "backward_hook_function", on_grads)
        for i, t in zip(wanted, routed):
            items[i] = t
        return items[0] if single else tuple(items)
