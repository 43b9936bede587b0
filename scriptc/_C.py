"""The few torch._C helpers that model code calls: `torch._C._get_tracing_state()` (None unless jit.trace
is recording; None in scripted code too), the ScriptList and ScriptDict classes."""

from __future__ import annotations

from scriptc.jit.script_containers import ScriptDict, ScriptList  # noqa: F401 - torch._C.ScriptList/ScriptDict


def _get_tracing_state():
    """The active jit.trace recorder, or None."""
    from scriptc import tensors

    return tensors._tracer[0]
