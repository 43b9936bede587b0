"""numpy's own BLAS, found for native code to call (the chain runner's GEMV, chain.py).

numpy's Linux and macOS wheels carry OpenBLAS built with 64-bit integers, its symbols suffixed
`64_` (scipy-openblas: `scipy_cblas_sgemv64_`; older wheels: `cblas_sgemv64_`). Only those are
used, so that the integer width is known; where none is found (numpy built against another BLAS)
there is no native GEMV and the executor keeps calling numpy.
"""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

_PREFIXES = ("libscipy_openblas", "libopenblas")
_SYMBOLS = {"float32": ("scipy_cblas_sgemv64_", "cblas_sgemv64_"), "float64": ("scipy_cblas_dgemv64_", "cblas_dgemv64_")}


@functools.cache
def gemv_addresses() -> dict[str, int] | None:
    """{'float32': address of cblas_sgemv, 'float64': of cblas_dgemv} in numpy's BLAS, or None."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    for folder in (os.path.join(root, "numpy.libs"), os.path.join(os.path.dirname(np.__file__), ".dylibs")):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.startswith(_PREFIXES):
                continue
            try:
                library = ctypes.CDLL(os.path.join(folder, name))
            except OSError:
                continue
            found = {}
            for dtype, symbols in _SYMBOLS.items():
                for symbol in symbols:
                    if hasattr(library, symbol):
                        found[dtype] = ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
                        break
            if len(found) == len(_SYMBOLS):
                return found
    return None
