"""Module's conversions: to(device / dtype / memory_format), to_empty, type, float, double, half, bfloat16,
cpu, cuda - each applied to every parameter and buffer through Module._apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scriptc.tensors import Tensor
from scriptc.types import dtype as Dtype

if TYPE_CHECKING:
    from .module import Module


def _parse_to(args, kwargs):
    """(device, dtype, memory_format) from Module.to's forms: to(device), to(dtype), to(device, dtype),
    to(tensor), keywords."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Dtype):
            dtype = a
        elif isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, bool):
            continue  # the non_blocking positional
        else:
            device = a
    return device, dtype, memory_format


class ModuleConversion:
    """These methods of nn.Module (a mixin: Module is the only class built on it)."""

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast: to(device), to(dtype), to(device, dtype), to(tensor), memory_format=. Only
        floating point parameters and buffers change dtype."""
        device, dtype, memory_format = _parse_to(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                t = t.to(device, dtype) if device is not None else t.to(dtype)
            elif device is not None:
                t = t.to(device)
            # torch lays out only 4-d and 5-d tensors in a memory format (channels_last, channels_last_3d)
            return t.to(memory_format=memory_format) if memory_format is not None and t.dim() in (4, 5) else t
        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Give every parameter and buffer new uninitialised storage on `device` (for modules built on
        the meta device before their weights are loaded)."""
        import scriptc
        return self._apply(lambda t: scriptc.empty_like(t, device=device), recurse=recurse)

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer, whatever its dtype, to dst_type."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        import scriptc
        target = scriptc.bfloat16
        return self._apply(lambda t: t.to(target) if t.is_floating_point() else t)

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        return self._apply(lambda t: t.cuda(device))
