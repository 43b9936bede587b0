"""F.pad in every mode: constant (negative pads crop), reflect, replicate and circular.

Each padded dim is a map from output positions to input positions (-1 where a constant fills):
the forward gathers through it, the gradient adds back through it, one slice per run of
consecutive positions (the interior is one run; borders are a few short ones).
"""

from __future__ import annotations

from scriptc.types import TensorType

from . import register
from .rules import is_known
from .schema import OPAQUE

MODES = ("constant", "reflect", "replicate", "circular")
_NON_CONSTANT_RANKS = {2: (2, 3), 4: (3, 4), 6: (4, 5)}


def _pairs(pad):
    """[(dim offset from the end, before, after), ...]: pad lists the last dim first."""
    return [(i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _check(shape, pad, mode, value):
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > len(shape):
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {len(shape)}")
    if mode not in MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        for i, before, after in _pairs(pad):
            size = shape[len(shape) - 1 - i]
            if size + min(before, 0) + min(after, 0) < 0 or size + before + after < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        return
    if value is not None and value != 0.0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if len(shape) not in _NON_CONSTANT_RANKS.get(len(pad), ()):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {len(shape)}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for i, before, after in _pairs(pad):
        dim = len(shape) - 1 - i
        size = shape[dim]
        if size == 0 and mode != "circular":
            raise RuntimeError(f"Expected {len(pad) // 2 + 1}D or {len(pad) // 2 + 2}D (batch mode) tensor with "
                               f"possibly 0 batch size and other non-zero dimensions for input, but got: {list(shape)}")
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                               f"{list(shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "circular" and size + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if size + before + after < 0:
            raise RuntimeError(f"input (W: {size}) is too small. Calculated output W: {size + before + after}")


def source_index(xp, mode: str, size: int, before: int, after: int):
    """For each output position along one padded dim, the input position it copies (-1: the constant)."""
    out = xp.arange(size + before + after)
    if mode == "circular":
        start, stop = max(-before, 0), size - max(-after, 0)
        length = stop - start
        # A pad longer than the cropped input wraps around it again (torch copies its output into itself there:
        # it refuses for some memory layouts and leaves memory unset for others); cropped to nothing, zeros.
        if length <= 0:
            return xp.full(out.shape, -1)
        return start + (out - max(before, 0)) % length
    src = out - before
    if mode == "constant":
        return xp.where((src >= 0) & (src < size), src, -1)
    if mode == "replicate":
        return xp.clip(src, 0, size - 1)
    period = 2 * (size - 1)  # reflect: mirror at 0 and size - 1, edges not repeated
    folded = xp.abs(src) % period if period else xp.zeros_like(src)
    return xp.where(folded < size, folded, period - folded)


def copy_runs(index):
    """(output start, output stop, input start) for each run of consecutive valid input positions."""
    positions = index.tolist()
    runs, start = [], None
    for j, i in enumerate(positions):
        if start is not None and i == positions[j - 1] + 1:
            continue
        if start is not None:
            runs.append((start, j, positions[start]))
        start = j if i >= 0 else None
    if start is not None:
        runs.append((start, len(positions), positions[start]))
    return runs


def _pad_kernel(xp, x, pad, mode="constant", value=None):
    pad = list(pad)
    _check(x.shape, pad, mode, value)
    out = x
    for i, before, after in _pairs(pad):
        if not (before or after):
            continue
        axis = x.ndim - 1 - i
        index = source_index(xp, mode, x.shape[axis], before, after)
        out = xp.take(out, xp.maximum(index, 0), axis=axis)
        if bool((index < 0).any()):
            where = [slice(None)] * x.ndim
            where[axis] = index < 0
            out[tuple(where)] = 0 if value is None else value
    return out if out is not x else x.copy()


def _pad_grad(ctx, g):
    xp, x, pad = ctx.xp, ctx.input, list(ctx.pad)
    for i, before, after in reversed(_pairs(pad)):
        if not (before or after):
            continue
        axis = x.ndim - 1 - i
        size = x.shape[axis]
        index = source_index(xp, ctx.mode, size, before, after)
        shape = list(g.shape)
        shape[axis] = size
        back = xp.zeros(shape, dtype=g.dtype)
        for out_start, out_stop, in_start in copy_runs(index):
            target = [slice(None)] * g.ndim
            source = [slice(None)] * g.ndim
            target[axis] = slice(in_start, in_start + out_stop - out_start)
            source[axis] = slice(out_start, out_stop)
            back[tuple(target)] += g[tuple(source)]
        g = back
    return g, None, None, None


def _pad_rule(x, pad, mode="constant", value=None):
    if x.shape is None or not is_known(pad):
        return TensorType(x.dtype, None, x.device)
    shape = list(x.shape)
    for i, before, after in _pairs(list(pad)):
        axis = len(shape) - 1 - i
        if 0 <= axis and isinstance(shape[axis], int):
            shape[axis] += before + after
        elif 0 <= axis:
            shape[axis] = None
    return TensorType(x.dtype, tuple(shape), x.device)


register("pad(input: Tensor, pad: int[], mode: str = 'constant', value: float? = None) -> Tensor", OPAQUE,
         _pad_kernel, shape=_pad_rule, grad=_pad_grad, method=False, functional=True,
         doc="Pads (or, with negative pads, crops) the last len(pad) // 2 dims; pad lists the last dim first.")
