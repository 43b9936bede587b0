"""torch.accelerator: the current accelerator device, for code that picks one generically.

scriptc's CUDA backend is reached through `device="cuda"`; torch.accelerator reports none, so
`torch.accelerator.is_available()` code paths run on the CPU.
"""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "synchronize"]


def is_available() -> bool:
    """Whether an accelerator is available to torch.accelerator: never in scriptc."""
    return False


def current_accelerator(check_available: bool = False):
    """The current accelerator device: None, as there is none."""
    return None


def device_count() -> int:
    return 0


def current_device_index() -> int:
    return -1


def synchronize(device=None) -> None:
    """Nothing to wait for without an accelerator."""
