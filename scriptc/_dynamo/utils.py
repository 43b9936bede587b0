"""torch._dynamo.utils: is_compile_supported, which library code asks before sending a function to
torch.compile (torchvision's roi_align takes its pure-tensor path on the devices where it holds)."""

from __future__ import annotations


def is_compile_supported(device_type) -> bool:
    """Whether torch.compile captures programs on this device type: the CPU (the one scriptc runs on)."""
    from scriptc.types import device

    return device(device_type).type == "cpu"
