"""What the layer modules share: tuple normalizers (as torch.nn.modules.utils) and uninitialised storage."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, wrap
from scriptc.ops.meta import meta_array
from scriptc.tensors.meta import on_meta
from scriptc.types import default_float


def _empty(*shape, dtype=None, device=None) -> Tensor:
    """Uninitialised storage for a layer's parameter or buffer, on the meta device (no data) where
    `device` is meta or, left None, the default device is (`with torch.device("meta"):`)."""
    for size in shape:
        if size < 0:  # (a layer built with a negative feature count)
            raise RuntimeError(f"Trying to create tensor with negative dimension {size}: {list(shape)}")
    np_dtype = (dtype or default_float()).np
    return wrap(meta_array(shape, np_dtype) if on_meta(device) else np.empty(shape, dtype=np_dtype))


def _filled(value, *shape, dtype=None, device=None) -> Tensor:
    """_empty's storage holding `value` (a meta tensor holds nothing)."""
    t = _empty(*shape, dtype=dtype, device=device)
    if not t.is_meta:
        t._data.fill(value)
    return t


def _ntuple(n: int, name: str | None = None):
    """A function making n-tuples: sequences pass through as tuples, a single value is repeated (scripted
    code calls _single ... _quadruple as TorchScript's builtins of those names)."""
    def parse(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if name is not None:
        parse._scriptc_ntuple = name
    return parse


_single, _pair, _triple, _quadruple = (_ntuple(n, name) for n, name in
                                        ((1, "_single"), (2, "_pair"), (3, "_triple"), (4, "_quadruple")))
_sextuple = _ntuple(6)


def _reverse_repeat_tuple(t) -> tuple:
    """(a, b) -> (b, b, a, a): per-dim padding in the last-dim-first order F.pad takes."""
    return tuple(x for x in reversed(t) for _ in range(2))
