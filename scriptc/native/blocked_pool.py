"""2-D max pooling of small or strided planes by blocks of channels in a vector's lanes, as a native loop.

blocked_depthwise.py's loop with its taps combined by a maximum over a border of -inf, where pool.py
goes a plane at a time: on SqueezeNet's 3x3 pools at stride 2 (rows of 7 or 15 outputs) a vector of
a row's outputs is half empty, or its taps come by gathers. A block whose input holds no NaN takes
each maximum by one compare and select (one vmaxps); a block with one keeps it as PyTorch does, a
compare more and an or a tap (SqueezeNet's 15x15 and 7x7 pools 14 -> 10 and 8.4 -> 6.5 us).

`scriptc_pool_blocked_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): blocks
[start, end) of (image, LANES channels), N * ceil(C / LANES) of them; ptrs = [input (N, C, H, W),
output (N, C, OH, OW)]; meta = [C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW]: each output the
maximum of its window's part inside the image (a NaN in it wins, as PyTorch's); ceil_mode's windows
that hang past the image come from Python's output size (geometry.pool_geometry).
"""

from __future__ import annotations

import functools

from llvmlite import ir

from . import blocked_depthwise
from .loops import loop_module

FUNCTIONS = {"float32": ("scriptc_pool_blocked_f32", ir.FloatType()),
             "float64": ("scriptc_pool_blocked_f64", ir.DoubleType())}
# The loop is blocked_depthwise.py's: a change there changes this module's machine code.
EXTRA_SOURCES = ("native/blocked_depthwise",)


def takes(geometry: list[int]) -> bool:
    """Whether a max pooling of pool_geometry `geometry` ([H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH,
    DW]) runs here rather than in pool.py's loop: its planes fit, and it is strided."""
    return blocked_depthwise.fits(*geometry) and geometry[6:8] != [1, 1]


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], functools.partial(blocked_depthwise.build, pooling=True))
