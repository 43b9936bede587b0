"""torch.finfo and torch.iinfo: the numerical limits of floating and integer dtypes."""

from __future__ import annotations

import numpy as np

from scriptc import types as T

__all__ = ["finfo", "iinfo"]

# bfloat16 is float32's exponent with 8 bits of mantissa: numpy has no such type, so its limits are written out.
_BFLOAT16 = {"bits": 16, "eps": 2.0 ** -7, "max": 3.3895313892515355e38, "tiny": 2.0 ** -126, "resolution": 0.01}


class finfo:
    """The limits of a floating dtype (float32 by default; a complex dtype's are its parts'): bits, eps, max,
    min, tiny (= smallest_normal), resolution, dtype (its name)."""

    def __init__(self, type: T.dtype | None = None):
        kind = T.float32 if type is None else type
        if kind.category not in (T.FLOAT, T.COMPLEX):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        kind = kind.to_real()
        if kind is T.bfloat16:
            limits = _BFLOAT16
        else:
            info = np.finfo(kind.np)
            limits = {"bits": info.bits, "eps": float(info.eps), "max": float(info.max),
                      "tiny": float(info.smallest_normal), "resolution": 10.0 ** -info.precision}
        self.bits, self.eps, self.max = limits["bits"], limits["eps"], limits["max"]
        self.min = -self.max
        self.tiny = self.smallest_normal = limits["tiny"]
        self.resolution = limits["resolution"]
        self.dtype = kind.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype: bits, max, min, dtype (its name)."""

    def __init__(self, type: T.dtype):
        if type is T.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != T.INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
