"""Autocast's thread-local state: per device type whether it is on and its lower-precision dtype,
the cast cache's switch and nesting depth, and the cache itself (torch.is_autocast_enabled & co.).

Eager dispatch reads `STATE.cpu_enabled` before every op, so it is a plain attribute of one
thread-local object rather than a lookup.
"""

from __future__ import annotations

import threading
import weakref

from scriptc.types import DEVICE_TYPE_NAMES, bfloat16, dtype, float16, float32

# The device types torch builds autocast for; scriptc computes only on the CPU, so "cpu" is the one
# whose state changes what ops do.
DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", "ipu", "privateuseone")
_DEFAULT_DTYPES = {"cpu": bfloat16, "mps": float16, "hpu": bfloat16, "xla": bfloat16, "ipu": float16}


class _AutocastState(threading.local):
    def __init__(self):
        self.cpu_enabled = False
        self.enabled: dict = {}
        self.dtypes: dict = {}
        self.cache_enabled = True
        self.nesting = 0
        # id(fp32 leaf weight) -> (weakref to it, its lower-precision cast)
        self.cache: dict = {}


STATE = _AutocastState()


def check_device_type(device_type, function: str = "is_autocast_enabled") -> str:
    """`device_type`, or torch's error for a value that is not a device type's name."""
    if not isinstance(device_type, str):
        raise TypeError(f"{function}(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    if device_type not in DEVICE_TYPE_NAMES:
        raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPE_NAMES)} device type at start of device "
                           f"string: {device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on `device_type` (a torch.device's `.type`)."""
    return check_device_type(device_type, "_is_autocast_available") in DEVICE_TYPES


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in this thread (without an argument: CUDA's, as torch)."""
    return STATE.enabled.get(check_device_type(device_type), False)


def set_autocast_enabled(device_type: str, enabled: bool = None) -> None:
    """Turn autocast on or off for `device_type` in this thread (`set_autocast_enabled(flag)`: CUDA)."""
    if enabled is None:
        if not isinstance(device_type, bool):
            raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(device_type).__name__}")
        device_type, enabled = "cuda", device_type
    STATE.enabled[check_device_type(device_type)] = bool(enabled)
    if device_type == "cpu":
        STATE.cpu_enabled = bool(enabled)


def get_autocast_dtype(device_type: str) -> dtype:
    """The lower-precision dtype autocast uses on `device_type` (bfloat16 on CPU, float16 on CUDA)."""
    device_type = check_device_type(device_type)
    return STATE.dtypes.get(device_type, _DEFAULT_DTYPES.get(device_type, float16))


def set_autocast_dtype(device_type: str, dtype: dtype) -> None:
    STATE.dtypes[check_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of fp32 leaf weights are reused within the outermost autocast region."""
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    STATE.nesting -= 1
    return STATE.nesting


def clear_autocast_cache() -> None:
    """Drop the cached lower-precision copies of weights (done when the outermost region exits)."""
    STATE.cache.clear()


def cached_cast(tensor, target):
    """`tensor.to(target)`, reusing the cast made earlier in this region for an fp32 leaf parameter
    (torch caches exactly those, so a weight used by several ops is cast once per forward)."""
    if not (STATE.cache_enabled and tensor.dtype is float32 and tensor.requires_grad and tensor.is_leaf
            and tensor._base is None):
        return tensor.to(target)
    entry = STATE.cache.get(id(tensor))
    if entry is not None and entry[0]() is tensor and entry[1].dtype is target:
        return entry[1]
    cast = tensor.to(target)
    STATE.cache[id(tensor)] = (weakref.ref(tensor), cast)
    return cast


def _deprecated_getter(name, device_type, what):
    import warnings

    def getter():
        warnings.warn(f"torch.{name}() is deprecated. Please use torch.{what}('{device_type}') instead.",
                      DeprecationWarning, stacklevel=2)
        return (is_autocast_enabled if what == "is_autocast_enabled" else get_autocast_dtype)(device_type)
    getter.__name__ = name
    getter.__doc__ = f"Deprecated: torch.{what}('{device_type}')."
    return getter


is_autocast_cpu_enabled = _deprecated_getter("is_autocast_cpu_enabled", "cpu", "is_autocast_enabled")
get_autocast_cpu_dtype = _deprecated_getter("get_autocast_cpu_dtype", "cpu", "get_autocast_dtype")
get_autocast_gpu_dtype = _deprecated_getter("get_autocast_gpu_dtype", "cuda", "get_autocast_dtype")
