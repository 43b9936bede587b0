"""torch.backends.quantized: which engine quantized ops compute as. scriptc's dynamic quantization computes
as torch's x86/fbgemm engine does (activations over 0..127 with reduce_range), so those are its engines."""

from __future__ import annotations

import sys
import types

supported_engines = ["x86", "fbgemm"]


class _QuantizedBackend(types.ModuleType):
    """This module, with `engine` a property as in torch: setting an engine scriptc lacks raises."""

    _engine = "x86"

    @property
    def engine(self) -> str:
        return self._engine

    @engine.setter
    def engine(self, value: str) -> None:
        if value not in supported_engines:
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        type(self)._engine = value


sys.modules[__name__].__class__ = _QuantizedBackend
