"""What the layer modules share: tuple normalizers (as torch.nn.modules.utils) and uninitialised storage."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, wrap
from scriptc.types import float32


def _empty(*shape, dtype=None) -> Tensor:
    return wrap(np.empty(shape, dtype=(dtype or float32).np))


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)
