"""Cases for unfold, positive (views.py), as_strided (strided.py), fill_diagonal (diagonal.py) and Tensor.where (pointwise.py)."""

from __future__ import annotations

import numpy as np

from .cases import Bool, Case, rand


def _unfold_ref(x, dimension, size, step):
    moved = np.moveaxis(x, dimension, -1)
    count = (moved.shape[-1] - size) // step + 1
    windows = np.stack([moved[..., i * step:i * step + size] for i in range(count)], axis=-2)
    return np.moveaxis(windows, -2, dimension % x.ndim)


def _fill_diagonal_ref(x, value, wrap=False):
    out = x.copy()
    np.fill_diagonal(out, value, wrap=wrap)
    return out


def _as_strided_ref(x, size, stride, storage_offset=0):
    flat = np.ascontiguousarray(x).ravel()
    index = np.full(tuple(size), storage_offset)
    for axis, (n, s) in enumerate(zip(size, stride)):
        index = index + (np.arange(n) * s).reshape((n,) + (1,) * (len(size) - axis - 1))
    return flat[index]


CASES = {
    "as_strided": [Case((rand(3, 4), [2, 2], [4, 1], 1), _as_strided_ref),
                   Case((rand(12), [3, 4], [1, 2]), _as_strided_ref, label="overlapping windows"),
                   Case((rand(2, 5), [5, 2], [1, 5]), _as_strided_ref, label="transposed"),
                   Case((rand(6), [2, 0, 3], [3, 0, 1]), _as_strided_ref, label="empty")],
    "unfold": [Case((rand(3, 7), 1, 3, 2), _unfold_ref, torch=lambda torch, x, *a: x.unfold(*a)),
               Case((rand(6, 2, 3), 0, 2, 1), _unfold_ref, torch=lambda torch, x, *a: x.unfold(*a), label="dim 0"),
               Case((rand(4, 5).T, -1, 4, 3), _unfold_ref, torch=lambda torch, x, *a: x.unfold(*a),
                    label="transposed")],
    "positive": [Case((rand(3, 4),), lambda x: x)],
    "fill_diagonal": [
        Case((rand(4, 4), 2.0), _fill_diagonal_ref, torch=lambda torch, x, v: x.clone().fill_diagonal_(v)),
        Case((rand(7, 3), -1.0, True), _fill_diagonal_ref, label="tall wrap",
             torch=lambda torch, x, v, wrap: x.clone().fill_diagonal_(v, wrap=wrap)),
        Case((rand(3, 3, 3), 0.5), _fill_diagonal_ref, label="3-d",
             torch=lambda torch, x, v: x.clone().fill_diagonal_(v))],
    "where.method": [Case((rand(3, 4), Bool(rand(3, 4) > 0), rand(4)), lambda x, c, y: np.where(c, x, y),
                          torch=lambda torch, x, c, y: x.where(c, y)),
                     Case((rand(3, 4), Bool(rand(3, 4) > 0), 0.5), lambda x, c, y: np.where(c, x, y),
                          torch=lambda torch, x, c, y: x.where(c, y), label="scalar")],
}
