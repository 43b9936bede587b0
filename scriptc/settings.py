"""Process-wide settings as torch has them: the default dtype (also by legacy tensor type) and device,
deterministic algorithms, float32 matmul precision, warn-always, flush-denormal.

Each setting reads back what was set and raises torch's error for a value torch refuses. The
default dtype changes what Python floats, float factories (zeros, rand, arange with a float, ...)
and new modules' parameters become. Deterministic mode fills what torch.empty & co. return as
torch does (NaN, an integer dtype's largest value); every scriptc CPU kernel is deterministic
already. Float32 products always compute in float32, which every matmul precision allows.
"""

from __future__ import annotations

from scriptc import types
from scriptc.types import bfloat16, dtype, float16, float32, float64

__all__ = ["set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "set_default_tensor_type", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal"]


def set_default_dtype(d: dtype) -> None:
    """Make `d` (float32, float64, float16 or bfloat16) the dtype of Python floats turned into tensors
    and of float factories called without dtype=; complex values follow (complex128 with float64;
    complex64 with float16, where torch has complex32; none with bfloat16, as in torch)."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    types.set_default_float(d)
    from scriptc.ops import execute
    execute.clear_dtype_cache()


def get_default_dtype() -> dtype:
    """The default floating dtype: float32 unless set_default_dtype changed it."""
    return types.default_float()


_warn_always = [False]
_warned_tensor_type = [False]


def set_default_tensor_type(t) -> None:
    """The old form of set_default_dtype: t a legacy float tensor type (torch.DoubleTensor) or its name
    ("torch.FloatTensor"). Deprecated in torch (a UserWarning says so, once), as here."""
    import importlib
    import warnings

    from scriptc import legacy

    if not _warned_tensor_type[0] or _warn_always[0]:  # (once a process, as torch, unless set_warn_always)
        _warned_tensor_type[0] = True
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                      "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                      stacklevel=2)
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module.endswith("cuda"):
            raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.")
        if module in ("torch", "scriptc"):
            t = getattr(legacy, name, None)
        else:  # (a dotted name elsewhere is imported, as torch does: ModuleNotFoundError if it is not there)
            importlib.import_module(module or name)
            t = None
        if t is None:
            raise TypeError(f"invalid type: '{name}'")
    if not isinstance(t, legacy._LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)


def set_warn_always(b: bool) -> None:
    """With True, warnings torch gives once per process are given every time (a flag code can read back)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormal floats to zero could be switched: False, as numpy's kernels (which
    scriptc's eager ops run) keep the CPU's default and honour denormals."""
    return False


_default_device = [types.CPU]


def set_default_device(device) -> None:
    """Make `device` (None or "cpu"; "meta": tensors without data; CUDA raises as in a build without a GPU)
    where factories put tensors when no device= is given."""
    if device is None:
        _default_device[0] = types.CPU
        return
    d = types.device(device)
    if d.type != "cpu":
        from scriptc.tensors.conversion import _check_device
        _check_device(d)
    _default_device[0] = d


def get_default_device() -> types.device:
    """The device set by set_default_device (cpu by default)."""
    return _default_device[0]


_outer_default_devices: list[types.device] = []


def push_default_device(device: types.device) -> None:
    """Entering `with device:`: `device` becomes the default, the one it replaces is kept for the exit."""
    outer = _default_device[0]
    set_default_device(device)
    _outer_default_devices.append(outer)


def pop_default_device() -> None:
    """Leaving `with device:`: the default device from before the block again."""
    _default_device[0] = _outer_default_devices.pop()


_deterministic = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Require deterministic algorithms (every scriptc CPU kernel is one): torch.empty, empty_like and
    new_empty then fill their memory as torch does (NaN, an integer dtype's largest value, True);
    warn_only records that a nondeterministic algorithm would only warn."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _deterministic["enabled"], _deterministic["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether use_deterministic_algorithms(True) is in effect."""
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether use_deterministic_algorithms was called with warn_only=True."""
    return _deterministic["warn_only"]


_DEBUG_MODES = ("default", "warn", "error")


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """The same setting as use_deterministic_algorithms, by name ("default", "warn", "error") or 0-2."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif isinstance(debug_mode, int):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (not deterministic), 1 (warn only) or 2 (deterministic), as set_deterministic_debug_mode takes."""
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record "highest", "high" or "medium" (scriptc's float32 products always run in float32, which
    every setting allows); another string warns and changes nothing, as torch does."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """The precision set by set_float32_matmul_precision ("highest" by default)."""
    return _matmul_precision[0]
