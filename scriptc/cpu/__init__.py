"""torch.cpu: the CPU device module (always available; one device) and its deprecated amp spellings."""

from __future__ import annotations

from . import amp  # noqa: F401


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Wait for queued CPU work: CPU ops finish before they return, so there is nothing to wait for."""
