"""torch.utils: `data` (Dataset, samplers, DataLoader)."""

import importlib

_SUBMODULES = {"data"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"scriptc.utils.{name}")
    raise AttributeError(f"module 'scriptc.utils' has no attribute '{name}'")
