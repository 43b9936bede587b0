"""skip_init (torch.nn.utils.skip_init): a module built without running its parameter initialisers."""

from __future__ import annotations

import inspect

from scriptc import nn

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) for a caller that will set every parameter and buffer itself: torch
    promises no particular values (scriptc's are whatever construction left)."""
    if not issubclass(module_cls, nn.Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
