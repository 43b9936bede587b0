"""torch.ops.aten: the op table by its ATen names, for code that calls ops through torch.ops
(`torch.ops.aten.add(x, y)`, `torch.ops.aten.index_put_.hacked_twin(...)`), eagerly and in scripted
code (an ATen name is the op's base name here); torch.ops.torchvision: the ops of the table that
torchvision's library registers (nms, roi_align, box_iou_rotated), which torchvision.ops calls there;
torch.ops.<namespace> of operators defined with torch.library (custom_namespace)."""

from __future__ import annotations

import types
from typing import Callable

# ATen's unchecked twins of ops: the same op here (its indices are checked all the same)
_UNCHECKED_TWINS = {"_unsafe_index": "index", "_unsafe_index_put": "index_put"}


class OpOverloadPacket:
    """torch.ops.aten.<name>: calls the op by the first of its overloads the arguments fit; every
    overload name (`.default`, `.Tensor`, `.hacked_twin`, ...) is the packet itself, as the table
    picks overloads by the arguments."""

    def __init__(self, namespace: str, name: str, base_name: str):
        from scriptc.bindings import overloaded_function

        from . import overloads

        self._namespace = namespace
        self._name = name
        self._scriptc_op = base_name  # jit.script calls the op by its base name, as a function
        self._scriptc_aten = True
        self._call = overloaded_function(base_name, overloads(base_name))

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, overload: str):
        if overload.startswith("_"):  # (overload names never do)
            raise AttributeError(f"'OpOverloadPacket' object has no attribute '{overload}'")
        return self

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._namespace}::{self._name}')>"


class OpNamespace(types.ModuleType):
    """torch.ops.<namespace>: an OpOverloadPacket for each op of the table it `holds`."""

    def __init__(self, namespace: str, holds: Callable[[str], bool]):
        super().__init__(f"scriptc.ops.{namespace}", __doc__)
        self._namespace = namespace
        self._holds = holds

    def __getattr__(self, name: str) -> OpOverloadPacket:
        from . import overloads

        base_name = _UNCHECKED_TWINS.get(name, name)
        if name.startswith("__") or not overloads(base_name) or not self._holds(name):
            raise AttributeError(f"'_OpNamespace' '{self._namespace}' object has no attribute '{name}'")
        return OpOverloadPacket(self._namespace, name, base_name)


_TORCHVISION_OPS = frozenset({"nms", "roi_align", "box_iou_rotated"})
aten = OpNamespace("aten", lambda name: name not in _TORCHVISION_OPS)
torchvision = OpNamespace("torchvision", _TORCHVISION_OPS.__contains__)


_CUSTOM_NAMESPACES: dict[str, types.ModuleType] = {}


def custom_namespace(namespace: str) -> types.ModuleType:
    """torch.ops.<namespace> for operators defined in Python with torch.library (made on first use)."""
    if namespace not in _CUSTOM_NAMESPACES:
        _CUSTOM_NAMESPACES[namespace] = types.ModuleType(f"scriptc.ops.{namespace}")
    return _CUSTOM_NAMESPACES[namespace]


def find_namespace(namespace: str) -> types.ModuleType:
    """The torch.ops attribute `namespace`: a torch.library namespace, or AttributeError as torch's."""
    if namespace in _CUSTOM_NAMESPACES:
        return _CUSTOM_NAMESPACES[namespace]
    raise AttributeError(f"module 'torch.ops' has no attribute '{namespace}'")
