"""torch.distributed as a PyTorch build without distributed support has it: is_available() is False and
the process-group API is absent, so `if dist.is_available() and dist.is_initialized()` takes the
single-process path."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether distributed training (process groups, collectives) is supported: not in scriptc."""
    return False
