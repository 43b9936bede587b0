"""torch.utils.swap_tensors: exchange what two tensor objects hold while each keeps its identity."""

from __future__ import annotations

import copyreg
import weakref

from scriptc.tensors import Tensor

__all__ = ["swap_tensors"]

# The per-tensor state a Tensor object carries besides its class and __dict__.
_STATE_SLOTS = ("_data", "requires_grad", "grad", "grad_fn", "_out_index", "_vc", "_base")


def swap_tensors(t1: Tensor, t2: Tensor) -> None:
    """Make t1 hold t2's contents (data, dtype, shape, class, grad, autograd history, attributes) and t2
    hold t1's, each object keeping its identity: what module conversion with
    `torch.__future__.set_swap_module_params_on_conversion(True)` does to parameters.

    Refused, as torch refuses, for a tensor something holds a weak reference to (a retained grad)
    and for tensors whose classes have different slots.
    """
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if weakref.getweakrefs(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    if set(copyreg._slotnames(type(t1))) != set(copyreg._slotnames(type(t2))):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    for slot in _STATE_SLOTS:
        first, second = getattr(t1, slot), getattr(t2, slot)
        object.__setattr__(t1, slot, second)
        object.__setattr__(t2, slot, first)
