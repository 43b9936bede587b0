"""The few torch._C helpers that model code calls: `torch._C._get_tracing_state()` (None unless jit.trace
is recording; None in scripted code too)."""

from __future__ import annotations


def _get_tracing_state():
    """The active jit.trace recorder, or None."""
    from scriptc import tensors

    return tensors._tracer[0]
