"""Cases for ordering ops (sorting.py)."""

from __future__ import annotations

import numpy as np

from .cases import Bool, Case, Int, noncontig, rand, rng


def _distinct(*shape):
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 1.0


def _sort_ref(x, dim=-1, descending=False, stable=False):
    if descending:
        n = x.shape[dim]
        order = n - 1 - np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    else:
        order = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, order, axis=dim), order


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    values, order = _sort_ref(x, dim, descending=largest)
    return np.take(values, range(k), axis=dim), np.take(order, range(k), axis=dim)


def _kthvalue_ref(x, k, dim=-1, keepdim=False):
    values, order = _sort_ref(x, dim)
    picked = np.take(values, [k - 1], axis=dim), np.take(order, [k - 1], axis=dim)
    return picked if keepdim else tuple(np.squeeze(p, dim) for p in picked)


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    out = [values] + ([inverse.reshape(x.shape) if dim is None else inverse.reshape(-1)] if return_inverse else []) \
        + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    flat = x.reshape(-1)
    fresh = np.concatenate([[True], flat[1:] != flat[:-1]])
    run = np.cumsum(fresh) - 1
    out = [flat[fresh]] + ([run.reshape(x.shape)] if return_inverse else []) + \
        ([np.bincount(run)] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _searchsorted_ref(sequence, values, out_int32=False, right=False, side=None, sorter=None):
    right = right or side == "right"
    if sorter is not None:
        sequence = np.take_along_axis(sequence, sorter, axis=-1)
    if sequence.ndim == 1:
        return np.searchsorted(sequence, values, side="right" if right else "left")
    return np.stack([np.searchsorted(s, v, side="right" if right else "left")
                     for s, v in zip(sequence.reshape(-1, sequence.shape[-1]), values.reshape(-1, values.shape[-1]))]
                    ).reshape(values.shape)


def _ties(*shape):
    return Int(rng.integers(0, 4, shape))


CASES = {
    "sort": [Case((_distinct(3, 5),), _sort_ref),
             Case((_distinct(4, 3), 0, True), _sort_ref, label="dim 0 descending"),
             Case((_ties(3, 6),), _sort_ref, kwargs={"dim": -1, "descending": True, "stable": True}, grad=False,
                  label="ties stable"),
             Case((noncontig(3, 4),), _sort_ref, label="transposed"),
             Case((Bool(rand(5) > 0),), _sort_ref, grad=False, label="bool")],
    "argsort": [Case((_ties(3, 6),), lambda x: _sort_ref(x)[1], kwargs={}, grad=False),
                Case((_ties(3, 6), 0, True), lambda x, d, desc: _sort_ref(x, d, desc)[1], grad=False,
                     kwargs={}, label="descending")],
    "msort": [Case((_distinct(4, 3),), lambda x: np.sort(x, axis=0))],
    "topk": [Case((_distinct(3, 6), 2), _topk_ref),
             Case((_distinct(5, 3), 3, 0, False), _topk_ref, label="smallest dim 0"),
             Case((Int(np.stack([rng.permutation(6) for _ in range(2)])), 3), _topk_ref, grad=False, label="int")],
    "kthvalue": [Case((_distinct(3, 6), 2), _kthvalue_ref),
                 Case((_distinct(5, 3), 4, 0, True), _kthvalue_ref, label="dim 0 keepdim")],
    "unique": [Case((_ties(3, 5),), _unique_ref, grad=False),
               Case((_ties(3, 5), True, True, True), _unique_ref, grad=False, label="inverse counts"),
               Case((Int(rng.integers(0, 2, (6, 3))),), _unique_ref, kwargs={"dim": 0, "return_inverse": True},
                    grad=False, label="dim 0"),
               Case((Int(rng.integers(0, 2, (3, 6))),), _unique_ref, kwargs={"dim": 1, "return_counts": True},
                    grad=False, label="dim 1")],
    "unique_consecutive": [Case((Int(np.array([1, 1, 2, 2, 3, 1, 1])),), _unique_consecutive_ref, grad=False),
                           Case((Int(np.array([1, 1, 2, 2, 3, 1, 1])), True, True), _unique_consecutive_ref,
                                grad=False, label="inverse counts")],
    "searchsorted": [Case((np.sort(rand(8)), rand(3, 4)), _searchsorted_ref, grad=False),
                     Case((np.sort(rand(2, 5)), rand(2, 3)), _searchsorted_ref, grad=False, kwargs={"right": True},
                          label="batched right"),
                     Case((Int(np.array([[1, 3, 5], [2, 4, 6]])), Int(np.array([[3, 4], [3, 6]]))), _searchsorted_ref,
                          grad=False, kwargs={"side": "right"}, label="side")],
    "bucketize": [Case((rand(3, 4), np.sort(rand(5))), lambda v, b: np.searchsorted(b, v), grad=False),
                  Case((Int(np.array([1, 5, 9])), Int(np.array([1, 3, 5, 7]))),
                       lambda v, b, right: np.searchsorted(b, v, side="right"), grad=False, kwargs={"right": True},
                       label="right")],
    "isin": [Case((Int(rng.integers(0, 6, (3, 4))), Int(np.array([1, 3, 5]))), np.isin, grad=False),
             Case((rand(3, 4), rand(5)), lambda e, t, invert: np.isin(e, t, invert=True), grad=False,
                  kwargs={"invert": True}, label="invert"),
             Case((3, Int(np.array([1, 3]))), np.isin, grad=False, label="scalar elements")],
}
