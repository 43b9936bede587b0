"""torch.autograd.profiler: the older profiler API, `profile` (a context manager recording while enabled)
and `record_function`, sharing torch.profiler's recorder (scriptc/profiler). Loaded on first use, since
scriptc.profiler builds on the tensors that import this package."""

from __future__ import annotations

import importlib

# name here -> (module, name there)
_NAMES = {"profile": ("scriptc.profiler.profile", "autograd_profile"),
          "record_function": ("scriptc.profiler.recorder", "record_function"),
          "EventList": ("scriptc.profiler.events", "EventList"),
          "FunctionEvent": ("scriptc.profiler.events", "FunctionEvent"),
          "FunctionEventAvg": ("scriptc.profiler.events", "FunctionEventAvg")}


def __getattr__(name: str):
    if name in _NAMES:
        module, attribute = _NAMES[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    from scriptc.torch_names import missing

    raise missing("torch.autograd.profiler", f"module '{__name__}'", name, sorted(_NAMES))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
