"""Cases for scans (scan.py) and order statistics and counting reductions (statistics.py)."""

from __future__ import annotations

import numpy as np

from .cases import Bool, Case, Int, noncontig, positive, rand, rng


def _distinct(*shape):
    """Floats without ties (medians and modes of ties pick an index torch leaves unspecified)."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 1.0


def _running(accumulate):
    def ref(x, dim):
        values = accumulate.accumulate(x, axis=dim)
        positions = np.arange(x.shape[dim]).reshape([-1 if a == dim % x.ndim else 1 for a in range(x.ndim)])
        return values, np.maximum.accumulate(np.where(x == values, positions, 0), axis=dim)
    return ref


def _logcumsumexp(x, dim):
    return np.logaddexp.accumulate(x, axis=dim)


def _diff(x, n=1, dim=-1, prepend=None, append=None):
    parts = [p for p in (prepend, x, append) if p is not None]
    return np.diff(np.concatenate(parts, axis=dim), n=n, axis=dim)


def _median(x, dim=None, keepdim=False):
    if dim is None:
        return np.sort(x.reshape(-1))[(x.size - 1) // 2]
    order = np.argsort(x, axis=dim, kind="stable")
    position = (x.shape[dim] - 1) // 2
    indices = np.take(order, [position], axis=dim)
    values = np.take_along_axis(x, indices, axis=dim)
    return (values, indices) if keepdim else (values.squeeze(dim), indices.squeeze(dim))


def _nanmedian(x):
    clean = np.sort(x[~np.isnan(x)])
    return clean[(clean.size - 1) // 2]


def _mode_ref(x, dim=-1):
    values, indices = [], []
    for row in np.moveaxis(x, dim, -1).reshape(-1, x.shape[dim]):
        found, counts = np.unique(row, return_counts=True)
        best = found[np.argmax(counts)]
        values.append(best)
        indices.append(np.nonzero(row == best)[0][-1])
    shape = np.moveaxis(x, dim, -1).shape[:-1]
    return np.array(values).reshape(shape), np.array(indices).reshape(shape)


def _quantile_ref(nan_aware):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        method = {"linear": "linear", "lower": "lower", "higher": "higher", "midpoint": "midpoint",
                  "nearest": "nearest"}[interpolation]
        fn = np.nanquantile if nan_aware else np.quantile
        return fn(x, q, axis=dim, keepdims=keepdim, method=method)
    return ref


def _with_nans(*shape):
    values = rand(*shape)
    values.reshape(-1)[rng.choice(values.size, size=max(1, values.size // 4), replace=False)] = np.nan
    return values


def _var_mean(x, dim=None, unbiased=True, keepdim=False, correction=None):
    ddof = (1 if unbiased else 0) if correction is None else correction
    axis = None if dim is None else tuple(np.atleast_1d(dim))
    return x.var(axis=axis, ddof=ddof, keepdims=keepdim), x.mean(axis=axis, keepdims=keepdim)


def _std_mean(*args, **kwargs):
    variance, mean = _var_mean(*args, **kwargs)
    return np.sqrt(variance), mean


def _histc_ref(x, bins=100, low=0, high=0):
    if low == high:
        low, high = x.min(), x.max()
    return np.histogram(x, bins=bins, range=(low, high))[0].astype(np.float64)


_POINTS = rand(20, 2)  # histogramdd's points (last dim: coordinates)

CASES = {
    "cumprod": [Case((rand(3, 4), 1), lambda x, d: np.cumprod(x, axis=d)),
                Case((noncontig(4, 3), 0), lambda x, d: np.cumprod(x, axis=d), label="transposed"),
                Case((np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 0.0, 1.5, 2.0]]), 1), lambda x, d: np.cumprod(x, axis=d),
                     label="zeros"),
                Case((Int(rng.integers(-3, 3, (2, 3))), -1), lambda x, d: np.cumprod(x, axis=d), grad=False,
                     label="int")],
    "cummax": [Case((_distinct(3, 4), 1), _running(np.maximum)),
               Case((np.array([1.0, 3.0, 3.0, 2.0, 5.0]), 0), _running(np.maximum), grad=False, label="ties")],
    "cummin": [Case((_distinct(3, 4), 0), _running(np.minimum)),
               Case((Int(np.array([3, 1, 1, 2])), 0), _running(np.minimum), grad=False, label="int ties")],
    "logcumsumexp": [Case((rand(3, 4), 1), _logcumsumexp),
                     Case((np.array([-1000.0, 0.0, -1000.0, 3.0]), 0), _logcumsumexp, label="spread"),
                     Case((rand(0, 3), 1), _logcumsumexp, label="empty")],
    "diff": [Case((rand(3, 5),), _diff),
             Case((rand(4, 3), 2, 0), _diff, label="n=2 dim 0"),
             Case((rand(2, 4), 1, 1, rand(2, 1), rand(2, 2)), _diff, label="prepend append"),
             Case((Int(rng.integers(0, 9, (5,))),), _diff, grad=False, label="int")],
    "median": [Case((_distinct(3, 5),), _median), Case((_distinct(4),), _median, label="even count")],
    "median.dim": [Case((_distinct(3, 5), 1), _median), Case((_distinct(4, 3), 0, True), _median, label="keepdim")],
    "nanmedian": [Case((_with_nans(3, 5),), _nanmedian)],
    "nanmedian.dim": [Case((_distinct(3, 5), 1), _median, label="no NaN")],
    "mode": [Case((Int(rng.integers(0, 4, (3, 7))),), _mode_ref, grad=False),
             Case((rng.integers(0, 3, (6, 2)).astype(np.float64), 0), _mode_ref, grad=False, label="dim 0"),
             Case((_distinct(3, 4), 1, True), lambda x, d, k: tuple(np.expand_dims(r, d) for r in _mode_ref(x, d)),
                  label="distinct keepdim")],
    "quantile": [Case((rand(4, 5), 0.3), _quantile_ref(False)),
                 Case((rand(4, 5), rng.uniform(0, 1, 3), 1, True), _quantile_ref(False), label="q tensor dim keepdim",
                      nograd=(1,)),
                 Case((_distinct(7), 0.4), _quantile_ref(False), kwargs={"interpolation": "nearest"}, label="nearest"),
                 Case((rand(2, 6), 0.7, 1), _quantile_ref(False), kwargs={"interpolation": "midpoint"},
                      label="midpoint"),
                 Case((rand(3, 4), 0.25, 0), _quantile_ref(False), kwargs={"interpolation": "lower"}, label="lower"),
                 Case((rand(3, 4), 0.25, 0), _quantile_ref(False), kwargs={"interpolation": "higher"},
                      label="higher")],
    "nanquantile": [Case((_with_nans(3, 8), 0.6, 1), _quantile_ref(True), grad=False),
                    Case((rand(3, 4), 0.5), _quantile_ref(True), label="no NaN")],
    "nansum": [Case((_with_nans(3, 4),), lambda x: np.nansum(x), grad=False),
               Case((rand(3, 4), 1), lambda x, d: np.nansum(x, axis=d), label="dim"),
               Case((Int(rng.integers(0, 5, (3, 4))),), lambda x: np.sum(x), grad=False, label="int")],
    "nanmean": [Case((_with_nans(3, 4), 1), lambda x, d: np.nanmean(x, axis=d), grad=False),
                Case((rand(3, 4), [0, 1], True), lambda x, d, k: x.mean(keepdims=True), label="dims keepdim")],
    "aminmax": [Case((_distinct(3, 4),), lambda x: (x.min(), x.max())),
                Case((_distinct(3, 4),), lambda x, dim, keepdim: (x.min(1, keepdims=True), x.max(1, keepdims=True)),
                     kwargs={"dim": 1, "keepdim": True}, label="dim"),
                Case((Int(rng.integers(0, 9, (3, 4))),), lambda x: (x.min(), x.max()), grad=False, label="int")],
    "var_mean": [Case((rand(3, 4),), _var_mean), Case((rand(3, 4), [1], False, True), _var_mean, label="dim keepdim"),
                 Case((rand(3, 4), 0), _var_mean, kwargs={"correction": 0}, label="correction")],
    "std_mean": [Case((positive(3, 4),), _std_mean), Case((rand(3, 4), [0]), _std_mean, label="dim")],
    "count_nonzero": [Case((Int(rng.integers(0, 3, (3, 4))),), np.count_nonzero, grad=False),
                      Case((Bool(rand(3, 4) > 0), [1]), lambda x, d: np.count_nonzero(x, axis=tuple(d)), grad=False,
                           label="dim")],
    "bincount": [Case((Int(rng.integers(0, 6, (20,))),), np.bincount, grad=False),
                 Case((Int(rng.integers(0, 4, (10,))), rand(10), 7), lambda x, w, m: np.bincount(x, w, m), grad=False,
                      label="weights minlength"),
                 Case((Int(np.zeros(0, np.int64)),), lambda x: np.zeros(0), grad=False, label="empty")],
    "histc": [Case((rand(30), 5, -1.0, 1.0), _histc_ref, grad=False),
              Case((rand(30), 4), _histc_ref, grad=False, label="data range")],
    "histogram.bin_ct": [
        Case((rand(3, 4), 5), lambda x, b: np.histogram(x, b), grad=False),
        Case((rand(10), 4), lambda x, b, range, density: np.histogram(x, b, range, density=density),
             kwargs={"range": [-1.0, 1.0], "density": True}, grad=False, label="range density",
             torch=lambda torch, x, b, range, density: torch.histogram(x, b, range=tuple(range), density=density))],
    "histogram.bins_tensor": [
        Case((rand(12), np.array([-2.0, -0.5, 0.0, 2.0])), lambda x, b: np.histogram(x, b), grad=False)],
    "_histogramdd_bin_edges": [
        Case((_POINTS, [3, 4]), lambda x, b: list(np.histogramdd(x, b)[1]), grad=False),
        Case((_POINTS, [2, 2]), lambda x, b, range: list(np.histogramdd(x, b, [range[:2], range[2:]])[1]),
             kwargs={"range": [-1.0, 1.0, 0.0, 2.0]}, grad=False, label="range")],
    "_histogramdd_from_bin_cts": [
        Case((_POINTS, [3, 4]), lambda x, b: np.histogramdd(x, b)[0], grad=False),
        Case((_POINTS, [2, 3]), lambda x, b, density: np.histogramdd(x, b, density=density)[0],
             kwargs={"density": True}, grad=False, label="density")],
    "_histogramdd_from_bin_tensors": [
        Case((_POINTS, [np.array([-2.0, 0.0, 2.0]), np.array([-1.0, 0.5, 1.0, 3.0])]),
             lambda x, b: np.histogramdd(x, b)[0], grad=False)],
}
