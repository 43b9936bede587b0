"""The few torch._C helpers that model code calls: `torch._C._get_tracing_state()` (None unless jit.trace
is recording; None in scripted code too), the ScriptList and ScriptDict classes, and `torch._C._Await`,
the class of what `torch.jit._awaitable` returns, and what Tensor subclasses use: DisableTorchFunctionSubclass
and _disabled_torch_function_impl."""

from __future__ import annotations

from scriptc._awaits import _Await
from scriptc.jit.script_containers import ScriptDict, ScriptList
from scriptc.tensors.subclass import DisableTorchFunctionSubclass, _disabled_torch_function_impl

__all__ = ["DisableTorchFunctionSubclass", "ScriptDict", "ScriptList", "_Await", "_disabled_torch_function_impl",
           "_get_tracing_state"]


def _get_tracing_state():
    """The active jit.trace recorder, or None."""
    from scriptc import tensors

    return tensors._tracer[0]
