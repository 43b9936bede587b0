"""Cases for the ops that write values into a copy of a tensor (placement.py)."""

from __future__ import annotations

import numpy as np

from .cases import Case, Int, rand, rng


def _select_scatter_ref(x, src, dim, index):
    out = x.copy()
    np.moveaxis(out, dim, 0)[index] = src
    return out


def _slice_scatter_ref(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    np.moveaxis(out, dim, 0)[start:end:step] = np.moveaxis(src, dim, 0)
    return out


def _diagonal_scatter_ref(x, src, offset=0, dim1=0, dim2=1):
    out = x.copy()
    rows = np.arange(src.shape[-1]) + max(-offset, 0)
    cols = np.arange(src.shape[-1]) + max(offset, 0)
    moved = np.moveaxis(out, (dim1, dim2), (-2, -1))
    moved[..., rows, cols] = src
    return out


def _put_ref(x, index, source, accumulate=False):
    out = x.copy().reshape(-1)
    if accumulate:
        np.add.at(out, index.reshape(-1), source.reshape(-1))
    else:
        out[index.reshape(-1)] = source.reshape(-1)
    return out.reshape(x.shape)


def _index_reduce_ref(x, dim, index, source, reduce, include_self=True):
    out = np.moveaxis(x.astype(np.float64).copy(), dim, 0)
    src = np.moveaxis(source, dim, 0)
    if not include_self:
        out[index] = {"mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
    ufunc = {"mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    ufunc.at(out, index, src)
    if reduce == "mean":
        counts = np.full(out.shape[0], 1 if include_self else 0)
        np.add.at(counts, index, 1)
        out = out / np.maximum(counts, 1).reshape((-1,) + (1,) * (out.ndim - 1))
    return np.moveaxis(out, 0, dim)


CASES = {
    "select_scatter": [Case((rand(3, 4), rand(4), 0, 1), _select_scatter_ref),
                       Case((rand(2, 3, 4), rand(2, 3), -1, -2), lambda x, s, d, i: _select_scatter_ref(x, s, 2, i),
                            label="negative")],
    "slice_scatter": [Case((rand(3, 6), rand(3, 2), 1, 1, 5, 2), _slice_scatter_ref),
                      Case((rand(4, 3), rand(2, 3)), _slice_scatter_ref, kwargs={"end": 2}, label="default dim")],
    "diagonal_scatter": [Case((rand(3, 4), rand(3), 1), _diagonal_scatter_ref),
                         Case((rand(2, 4, 3), rand(2, 3), -1, 1, 2), _diagonal_scatter_ref, label="batched below")],
    "put": [Case((rand(3, 4), Int(rng.permutation(12)[:5].reshape(5) - 6), rand(5)), _put_ref),
            Case((rand(3, 4), Int(rng.integers(0, 12, (2, 3))), rand(2, 3), True), _put_ref, label="accumulate")],
    "index_reduce": [Case((rand(4, 3), 0, Int(np.array([3, 0, 3, 1])), rand(4, 3), reduce), _index_reduce_ref,
                          label=reduce, grad=reduce != "prod") for reduce in ("prod", "mean", "amax", "amin")] + [
                     Case((rand(3, 4), 1, Int(np.array([2, 2, 0])), rand(3, 3), "mean"), _index_reduce_ref,
                          kwargs={"include_self": False}, label="mean without self"),
                     Case((rand(4, 3), 0, Int(np.array([3, 0, 3])), rand(3, 3), "prod"), _index_reduce_ref,
                          kwargs={"include_self": False}, label="prod without self")],
}
