"""torch.autocast: a context manager and decorator under which ops run in an op-specific dtype."""

from __future__ import annotations

import collections.abc
import functools
import warnings

from scriptc.types import bfloat16, dtype, float16, float64

from . import state


def autocast_decorator(autocast_instance: "autocast", func):
    """`func` run inside `autocast_instance` on every call."""
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    decorate_autocast.__script_unsupported = "@autocast() decorator is not supported in script mode"
    return decorate_autocast


class autocast:
    """Run the region's ops in mixed precision: on the CPU, matrix products and convolutions
    (linear, matmul, bmm, addmm, baddbmm, conv*, ...) compute in `dtype` (bfloat16 by default) and
    return it, losses and accuracy-sensitive ops compute in float32, the rest in their inputs'
    dtype. Gradients flow back through the casts in the parameters' own dtype.

    `autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`, as
    `with autocast("cpu"):` or as a decorator. Regions nest; `enabled=False` turns autocast off
    inside an enabled region. The state is thread-local. Without a GPU, `device_type="cuda"` warns
    and disables itself as PyTorch does on a machine without CUDA.
    """

    def __init__(self, device_type: str, dtype: dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = state.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not state.is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            enabled = self._usable(device_type, self.fast_dtype)
        self._enabled = enabled

    @staticmethod
    def _usable(device_type: str, fast_dtype) -> bool:
        """False (after torch's warning) where autocast cannot run as asked."""
        if device_type == "cuda":
            from scriptc import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=3)
                return False
            return True
        supported = (bfloat16, float16)
        if fast_dtype not in supported:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtypes of {', '.join(map(str, supported))} currently.",
                          stacklevel=3)
            return False
        return True

    def __enter__(self):
        self.prev_cache_enabled = state.is_autocast_cache_enabled()
        self.prev = state.is_autocast_enabled(self.device)
        self.prev_fastdtype = state.get_autocast_dtype(self.device)
        state.set_autocast_enabled(self.device, self._enabled)
        state.set_autocast_dtype(self.device, self.fast_dtype)
        state.autocast_increment_nesting()
        state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        if state.autocast_decrement_nesting() == 0:
            state.clear_autocast_cache()
        state.set_autocast_enabled(self.device, self.prev)
        state.set_autocast_dtype(self.device, self.prev_fastdtype)
        state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")
        return autocast_decorator(self, func)


def _cast(value, device_type: str, dtype: dtype):
    """`value` with every floating tensor (float64 excepted) inside it converted to `dtype`."""
    from scriptc.tensors import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable) and not hasattr(value, "__array__"):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def _check_device_type_argument(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: dtype | None = None):
    """Decorator for a custom autograd Function's `forward`: with `cast_inputs`, inside an autocast
    region its floating tensor inputs are cast to that dtype and it runs with autocast off;
    without, it runs under the caller's autocast state. `custom_bwd` replays that state in backward."""
    _check_device_type_argument(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if state.is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom autograd Function's `backward`: it runs under the autocast state its
    `forward` (decorated with `custom_fwd`) ran under."""
    _check_device_type_argument(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
