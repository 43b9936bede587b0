"""torch.autograd.graph: saved_tensors_hooks and disable_saved_tensors_hooks, the graph's Node type.

While a `saved_tensors_hooks(pack_hook, unpack_hook)` block is active, every tensor an op saves
for its backward (an input its gradient formula reads, or a tensor an autograd.Function passes to
save_for_backward) is handed to `pack_hook` when it is saved, and what that returns is kept in
its place; backward calls `unpack_hook` on it to get the tensor back. Outputs an op's formula
reads (exp's, tanh's) are kept as they are.
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class _HookStack(threading.local):
    def __init__(self):
        self.stack: list = []
        self.disabled: str | None = None


_hooks = _HookStack()


class _Packed:
    """What pack_hook returned for one saved tensor, with the unpack_hook to undo it."""

    __slots__ = ("value", "unpack")

    def __init__(self, value, unpack):
        self.value, self.unpack = value, unpack


def _active() -> tuple | None:
    if not _hooks.stack:
        return None
    if _hooks.disabled is not None:
        raise RuntimeError(_hooks.disabled)
    return _hooks.stack[-1]


def pack_saved(tensor):
    """A saved tensor as the innermost active saved_tensors_hooks keeps it (itself when none is)."""
    hooks = _active() if tensor is not None else None
    if hooks is None:
        return tensor
    pack, unpack = hooks
    # as torch, what the pack hook itself computes saves its tensors unhooked (no recursion)
    stack, _hooks.stack = _hooks.stack, []
    try:
        return _Packed(pack(tensor), unpack)
    finally:
        _hooks.stack = stack


def unpack_saved(item):
    """The tensor a pack_saved result stands for."""
    from scriptc.tensors import Tensor

    if type(item) is not _Packed:
        return item
    tensor = item.unpack(item.value)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(tensor).__name__}")
    return tensor


def pack_op_inputs(op, args: list, in_tensors) -> bool:
    """Replace, in a recorded call's arguments, each tensor its formula reads by what the active
    pack_hook makes of it; True when there was an active hook."""
    from scriptc.tensors import Tensor

    if not _hooks.stack:
        return False
    for name in op.save:
        if name != "out" and isinstance(in_tensors[op.arg_index[name]], Tensor):
            args[op.arg_index[name]] = pack_saved(in_tensors[op.arg_index[name]])
    return True


def unpacked_context(ctx):
    """A copy of a SavedContext with its packed arguments unpacked back to arrays."""
    args = [unpack_saved(a)._data if type(a) is _Packed else a for a in ctx.args]
    return type(ctx)(ctx.op, args, ctx.out, ctx.aux, ctx.xp)


def __getattr__(name: str):
    if name == "Node":
        from scriptc.autograd.engine import Node
        return Node
    raise AttributeError(f"module 'torch.autograd.graph' has no attribute '{name}'")


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything, called as an op saves a tensor for backward;
    unpack_hook(that) -> Tensor, called when backward needs it."""

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _hooks.disabled is not None:
            raise RuntimeError(_hooks.disabled)
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> bool:
        _hooks.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU (where scriptc keeps every tensor): saved as copies there."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t.detach().clone(), lambda t: t)


class disable_saved_tensors_hooks:
    """Context manager under which registering or using saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self.previous = _hooks.disabled
        _hooks.disabled = self.error_message

    def __exit__(self, *exc) -> bool:
        _hooks.disabled = self.previous
        return False
