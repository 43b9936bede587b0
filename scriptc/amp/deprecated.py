"""The device-named spellings torch deprecated in favour of torch.amp: `torch.cuda.amp.autocast`,
`torch.cuda.amp.GradScaler`, `torch.cpu.amp.autocast`, `torch.cpu.amp.GradScaler`. Each warns
(FutureWarning, torch's words) and behaves as torch.amp's with the device filled in."""

from __future__ import annotations

import functools
import warnings

from scriptc.types import bfloat16, float16

from .autocast_mode import autocast
from .grad_scaler import GradScaler


def _warn(old: str, new: str) -> None:
    warnings.warn(f"`torch.{old}(args...)` is deprecated. Please use `torch.{new}` instead.", FutureWarning,
                  stacklevel=3)


def autocast_alias(device_type: str, default_dtype):
    """autocast for one device, with torch's defaults for that device's old spelling."""
    class DeviceAutocast(autocast):
        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            _warn(f"{device_type}.amp.autocast", f"amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    DeviceAutocast.__doc__ = (f"Deprecated: torch.amp.autocast('{device_type}', ...) (default dtype "
                              f"{default_dtype}).")
    return DeviceAutocast


def grad_scaler_alias(device_type: str):
    """GradScaler for one device under its old spelling."""
    class DeviceGradScaler(GradScaler):
        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _warn(f"{device_type}.amp.GradScaler", f"amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    DeviceGradScaler.__name__ = DeviceGradScaler.__qualname__ = "GradScaler"
    DeviceGradScaler.__doc__ = f"Deprecated: torch.amp.GradScaler('{device_type}', ...)."
    return DeviceGradScaler


def cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: torch.amp.custom_fwd(..., device_type='cuda')."""
    _warn("cuda.amp.custom_fwd", "amp.custom_fwd(args..., device_type='cuda')")
    from .autocast_mode import custom_fwd
    return functools.partial(custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd):
    """Deprecated: torch.amp.custom_bwd(..., device_type='cuda')."""
    _warn("cuda.amp.custom_bwd", "amp.custom_bwd(args..., device_type='cuda')")
    from .autocast_mode import custom_bwd
    return custom_bwd(bwd, device_type="cuda")


CPU_AUTOCAST = autocast_alias("cpu", bfloat16)
CUDA_AUTOCAST = autocast_alias("cuda", float16)
CPU_GRAD_SCALER = grad_scaler_alias("cpu")
CUDA_GRAD_SCALER = grad_scaler_alias("cuda")
