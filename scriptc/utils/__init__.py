"""scriptc.utils: torch.utils' helpers (hooks, checkpoint), `data` (Dataset, samplers, DataLoader) and
`benchmark` (Timer), `_pytree` (tree_flatten & co.), which load on first use, and swap_tensors."""

import importlib

from . import checkpoint  # noqa: F401
from . import hooks  # noqa: F401
from .swap import swap_tensors  # noqa: F401

_SUBMODULES = {"data", "benchmark", "_pytree"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"scriptc.utils.{name}")
    raise AttributeError(f"module 'scriptc.utils' has no attribute '{name}'")
