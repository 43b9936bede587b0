"""QConfig: which observers quantize a module's activation and weight (torch.ao.quantization.qconfig)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .observer import (
    default_dynamic_quant_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
    float16_observer,
    PlaceholderObserver,
)
from scriptc.types import float16

__all__ = ["QConfig", "default_dynamic_qconfig", "per_channel_dynamic_qconfig", "float16_dynamic_qconfig"]


class QConfig(NamedTuple):
    """The observer constructors (`Observer.with_args(...)`) for a module's activation and its weight."""

    activation: Any
    weight: Any


default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=float16, is_dynamic=True),
                                  weight=float16_observer)
