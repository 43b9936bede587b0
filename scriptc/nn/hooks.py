"""Module hooks: registering forward, forward-pre and full backward hooks, and calling a module through
them; the full backward hooks work as torch.utils.hooks' BackwardHook does.

A module with backward hooks routes its tensor inputs and outputs through two
identity autograd Nodes made here: the one on the outputs sees grad_output
(and runs the backward pre-hooks), the one on the inputs sees grad_input (and
runs the backward hooks) - each once per backward, with every tensor at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from scriptc import autograd
from scriptc.tensors import Tensor, wrap
from scriptc.utils.hooks import RemovableHandle


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


class ModuleHooks:
    """The hook half of Module: the registration methods and the call path taken when any hook is set
    (Module.__call__ takes a plain forward call otherwise). The hook dicts are made by Module.__init__."""

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) (or hook(module, args, kwargs) with with_kwargs) runs before forward and may
        return new args (or (args, kwargs))."""
        handle = add_hook(self._forward_pre_hooks, hook, prepend, self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) (or hook(module, args, kwargs, output)) runs after forward and may return
        a new output; with always_call it also runs when forward raises."""
        handle = add_hook(self._forward_hooks, hook, prepend, self._forward_hooks_with_kwargs,
                           self._forward_hooks_always_called)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) runs when the gradients of the outputs are ready; it may return new ones."""
        return add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) runs when the gradients of the inputs are computed; it may
        return new grad_input."""
        self._claim_backward_hooks(full=True)
        return add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated: hook(module, grad_input, grad_output) runs on the last op of forward only, so
        grad_input holds that op's input gradients (torch warns on every call where that differs from the
        module's inputs). Use register_full_backward_hook."""
        self._claim_backward_hooks(full=False)
        return add_hook(self._backward_hooks, hook)

    def _claim_backward_hooks(self, full: bool) -> None:
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    def _call_with_hooks(self, args, kwargs):
        result = None
        called = set()
        try:
            for hook_id, hook in self._forward_pre_hooks.items():
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    changed = hook(self, args, kwargs)
                    if changed is not None:
                        if not (isinstance(changed, tuple) and len(changed) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {changed}.")
                        args, kwargs = changed
                else:
                    changed = hook(self, args)
                    if changed is not None:
                        args = changed if isinstance(changed, tuple) else (changed,)
            backward_hook = None
            if self._backward_pre_hooks or (self._backward_hooks and self._is_full_backward_hook):
                backward_hook = BackwardHook(self, list(self._backward_hooks.values()),
                                             list(self._backward_pre_hooks.values()))
                args = backward_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in self._forward_hooks.items():
                called.add(hook_id)
                changed = hook(self, args, kwargs, result) if hook_id in self._forward_hooks_with_kwargs \
                    else hook(self, args, result)
                if changed is not None:
                    result = changed
            if backward_hook is not None:
                result = backward_hook.setup_output_hook(result)
            if self._backward_hooks and self._is_full_backward_hook is False:
                hook_last_node(self, args, result, list(self._backward_hooks.values()))
            return result
        except Exception:
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    changed = hook(self, args, kwargs, result) if hook_id in self._forward_hooks_with_kwargs \
                        else hook(self, args, result)
                    if changed is not None:
                        result = changed
            raise


def hook_last_node(module, args: tuple, result: Any, hooks: list) -> None:
    """The deprecated register_backward_hook: hooks run on the autograd node of forward's first tensor
    output, with torch's FutureWarning where that node is not all the module did."""
    first = result
    while not isinstance(first, Tensor):
        first = next(v for v in first.values() if isinstance(v, Tensor)) if isinstance(first, dict) else first[0]
    node = first.grad_fn
    if node is None:
        return
    for hook in hooks:
        node.register_hook(_on_module(hook, module))
    outputs = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(outputs, tuple) and all(isinstance(r, Tensor) for r in outputs)):
        _warn_non_full("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple "
                       "of Tensors is deprecated and will be removed in future versions. This hook will be missing "
                       "some of the grad_output.")
        return
    if not all(isinstance(a, Tensor) for a in args):
        _warn_non_full("Using non-full backward hooks on a Module that does not take as input a single Tensor or "
                       "a tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
                       "missing some of the grad_input.")
        return
    out_nodes = {id(r.grad_fn) for r in outputs if r.grad_fn is not None}
    if len(out_nodes) > 1:
        _warn_non_full("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                       "deprecated and will be removed in future versions. This hook will be missing some "
                       "grad_output.")
    elif {id(a.grad_fn) for a in args if a.grad_fn is not None} != {id(n) for n, _ in node.next_functions}:
        _warn_non_full("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                       "deprecated and will be removed in future versions. This hook will be missing some "
                       "grad_input.")


def _on_module(hook: Callable, module) -> Callable:
    """A Node hook calling the module hook with the module, checking what it returns as torch does."""
    def node_hook(grad_input: tuple, grad_output: tuple):
        result = hook(module, grad_input, grad_output)
        if result is not None:
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            if len(result) != len(grad_input):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', type(hook).__name__)}' has returned an "
                                   f"incorrect number of values (got {len(result)}, but expected {len(grad_input)})")
        return result
    return node_hook


def _warn_non_full(message: str) -> None:
    import warnings

    warnings.warn(message + " Please use register_full_backward_hook to get the documented behavior.",
                  FutureWarning, stacklevel=4)


def add_hook(hooks: OrderedDict, hook: Callable, prepend: bool = False, *extra: OrderedDict) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra_dict=list(extra))
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle

