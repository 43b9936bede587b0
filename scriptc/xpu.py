"""torch.xpu: Intel GPUs, which scriptc has no backend for; code that asks (`torch.xpu.is_available()`,
as pytorch/examples do when picking a device) is told there are none and runs on the CPU."""

from __future__ import annotations

__all__ = ["is_available", "device_count", "is_initialized"]


def is_available() -> bool:
    """Whether an XPU device can be used: never in scriptc."""
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False
