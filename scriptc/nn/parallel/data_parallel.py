"""DataParallel on the one CPU device: the wrapped module runs on the whole batch, as torch's does when no
accelerator is present (device_ids are then ignored)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..module import Module


class DataParallel(Module):
    """Wraps `module`; calling it calls the module on the whole input (state_dict keys gain "module.")."""

    def __init__(self, module: Module, device_ids: Optional[Sequence] = None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.dim = dim
        self.output_device = output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Optional[Sequence] = None, output_device=None,
                  dim: int = 0, module_kwargs: Optional[dict] = None) -> Any:
    """module(*inputs, **module_kwargs), evaluated on the CPU."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
