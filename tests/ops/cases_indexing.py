"""Cases for indexing ops (indexing.py)."""

from __future__ import annotations

import numpy as np

from .cases import Bool, Case, Int, rand, rng


def _scatter_ref(x, dim, index, src, reduce=None):
    out = x.copy()
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    values = src[tuple(slice(0, n) for n in index.shape)] if np.ndim(src) else np.broadcast_to(src, index.shape)
    {None: out.__setitem__, "add": lambda k, v: np.add.at(out, k, v),
     "multiply": lambda k, v: np.multiply.at(out, k, v)}[reduce](tuple(grid), values)
    return out


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    out = x.astype(np.float64).copy()
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    key = tuple(grid)
    values = src[tuple(slice(0, n) for n in index.shape)]
    touched = np.zeros(x.shape, bool)
    touched[key] = True
    if not include_self:
        out[touched] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
    {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce].at(
        out, key, values)
    if reduce == "mean":
        counts = np.full(x.shape, 1 if include_self else 0)
        np.add.at(counts, key, 1)
        out = out / np.maximum(counts, 1)
    return out


def _unique_rows_index(rows, cols, size):
    """An index of shape (rows, cols) whose entries are distinct within each column (scatter without races)."""
    return Int(np.stack([rng.permutation(size)[:rows] for _ in range(cols)], axis=1))


def _index_add_ref(x, dim, index, source, alpha=1):
    out = x.copy()
    key = [slice(None)] * x.ndim
    key[dim] = index
    np.add.at(out, tuple(key), source * alpha)
    return out


def _index_copy_ref(x, dim, index, source):
    out = x.copy()
    key = [slice(None)] * x.ndim
    key[dim] = index
    out[tuple(key)] = source
    return out


def _index_fill_ref(x, dim, index, value):
    return _index_copy_ref(x, dim, index, value)


def _mask(*shape):
    return Bool(rand(*shape) > 0)


CASES = {
    "nonzero": [Case((Int(rng.integers(0, 2, (3, 4))),), np.argwhere, grad=False),
                Case((Int(rng.integers(0, 2, (3, 4))),), lambda x, as_tuple: np.nonzero(x), grad=False,
                     kwargs={"as_tuple": True}, label="as_tuple"),
                Case((rand(5),), lambda x, as_tuple: np.nonzero(x), grad=False, kwargs={"as_tuple": True},
                     label="1-d as_tuple")],
    "argwhere": [Case((_mask(2, 3, 4),), np.argwhere, grad=False)],
    "where.cond": [Case((_mask(3, 4),), np.nonzero, grad=False, torch=lambda torch, c: torch.where(c))],
    "masked_select": [Case((rand(3, 4), _mask(3, 4)), lambda x, m: x[m]),
                      Case((rand(3, 4), _mask(4)), lambda x, m: x[np.broadcast_to(m, x.shape)], label="broadcast")],
    "masked_scatter": [Case((rand(3, 4), _mask(3, 4), rand(12)),
                            lambda x, m, s: np.where(m, np.zeros_like(x), x) + _placed(m, s, x))],
    "scatter": [Case((rand(3, 4), 0, _unique_rows_index(2, 4, 3), rand(2, 4)), _scatter_ref),
                Case((rand(3, 4), 1, Int(np.stack([rng.permutation(4)[:2] for _ in range(3)])), rand(3, 5)),
                     _scatter_ref, grad=False, label="dim 1, larger src (torch's backward fails on it)"),
                Case((rand(3, 4), 0, Int(np.array([[0, 1, 2, 0]])), 1.5), _scatter_ref, grad=False, label="scalar"),
                Case((rand(3, 4), 0, Int(np.array([[0, 1], [0, 2]])), rand(2, 2)), _scatter_ref, grad=False,
                     kwargs={"reduce": "add"}, label="reduce add")],
    "scatter_add": [Case((rand(3, 4), 0, Int(rng.integers(0, 3, (5, 4))), rand(5, 4)),
                         lambda x, d, i, s: _scatter_ref(x, d, i, s, "add"))],
    "scatter_reduce": [Case((rand(3, 4), 0, Int(rng.integers(0, 3, (5, 4))), rand(5, 4), reduce),
                            _scatter_reduce_ref, label=reduce, grad=reduce != "prod") for reduce in
                       ("sum", "mean", "amax", "amin", "prod")] + [
                       Case((rand(3, 4), 0, Int(rng.integers(0, 3, (5, 4))), rand(5, 4), "mean"), _scatter_reduce_ref,
                            kwargs={"include_self": False}, label="mean without self"),
                       Case((rand(3, 4), 1, Int(rng.integers(0, 4, (3, 6))), rand(3, 6), "amax"), _scatter_reduce_ref,
                            kwargs={"include_self": False}, label="amax without self")],
    "index_add": [Case((rand(5, 3), 0, Int(np.array([4, 0, 4])), rand(3, 3)), _index_add_ref),
                  Case((rand(3, 5), 1, Int(np.array([1, 3])), rand(3, 2)), _index_add_ref, kwargs={"alpha": 2.0},
                       label="alpha")],
    "index_copy": [Case((rand(5, 3), 0, Int(np.array([4, 0])), rand(2, 3)), _index_copy_ref)],
    "index_fill": [Case((rand(5, 3), 0, Int(np.array([4, 0])), -1.0), _index_fill_ref),
                   Case((rand(3, 5), 1, Int(np.array([2])), 3.0), _index_fill_ref, label="dim 1")],
    "take": [Case((rand(3, 4), Int(rng.integers(-12, 12, (2, 5)))), lambda x, i: x.reshape(-1)[i])],
    "take_along_dim": [Case((rand(3, 4), Int(rng.integers(0, 4, (3, 2))), 1),
                            lambda x, i, d: np.take_along_axis(x, i, d)),
                       Case((rand(3, 4), Int(rng.integers(0, 3, (2, 1))), 0),
                            lambda x, i, d: np.take_along_axis(x, np.broadcast_to(i, (2, 4)), d), label="broadcast"),
                       Case((rand(3, 4), Int(rng.integers(0, 12, (5,)))), lambda x, i: x.reshape(-1)[i],
                            label="flat")],
}


def _placed(mask, source, x):
    out = np.zeros_like(x)
    out[mask] = source.reshape(-1)[:int(mask.sum())]
    return out
