"""torch.backends.cudnn: cuDNN's flags (kept, unused: scriptc has no cuDNN backend)."""

from __future__ import annotations

import contextlib

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """Whether cuDNN can be used: never in scriptc."""
    return False


def version():
    """cuDNN's version: None, as there is none."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a with block and restore them after."""
    saved = _current()
    _set(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        _set(*saved)


def _current():
    return enabled, benchmark, benchmark_limit, deterministic, allow_tf32


def _set(new_enabled, new_benchmark, new_limit, new_deterministic, new_tf32):
    global enabled, benchmark, benchmark_limit, deterministic, allow_tf32
    enabled, benchmark, benchmark_limit, deterministic, allow_tf32 = (
        new_enabled, new_benchmark, new_limit, new_deterministic, new_tf32)
