"""torch.histogram: counts (or weights, or a density) of a tensor's values in bins given as a count with an
optional range, or as bin edges; returns (hist, bin_edges). And the ops of torch.histogramdd, its
D-dimensional form over points given as the last dim of the input."""

from __future__ import annotations

import math

from scriptc.types import TensorType, from_numpy_dtype

from . import register
from .matrix import c_type_name
from .rules import scalar_type_name
from .schema import OPAQUE


def _checked(x, weight) -> None:
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{scalar_type_name(from_numpy_dtype(x.dtype))}'")
    if weight is not None and weight.shape != x.shape:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(x.shape)} and weight with shape {list(weight.shape)}")


def _count_kernel(xp, x, bins=100, range=None, weight=None, density=False):
    _checked(x, weight)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None and range[0] > range[1]:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {range[0]:g} max {range[1]:g} "
                           f"for dimension 0")
    hist, edges = xp.histogram(x.ravel(), bins=bins, range=None if range is None else tuple(range),
                               weights=None if weight is None else weight.ravel(), density=density)
    return hist.astype(x.dtype), edges.astype(x.dtype)


def _edges_kernel(xp, x, bins, weight=None, density=False):
    _checked(x, weight)
    if bins.ndim != 1:
        raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension, but got {bins.ndim} "
                           f"dimensions")
    hist, _ = xp.histogram(x.ravel(), bins=bins, weights=None if weight is None else weight.ravel(),
                           density=density)
    return hist.astype(x.dtype), bins.copy()


def _count_rule(x, bins=100, *rest):
    count = bins if isinstance(bins, int) else None
    return (TensorType(x.dtype, None if count is None else (count,), x.device),
            TensorType(x.dtype, None if count is None else (count + 1,), x.device))


def _edges_rule(x, bins, *rest):
    edges = bins.shape[0] if bins.shape and isinstance(bins.shape[0], int) else None
    return (TensorType(x.dtype, None if edges is None else (edges - 1,), x.device),
            TensorType(x.dtype, bins.shape, x.device))


_DOC = "(hist, bin_edges): how many values (or how much weight, or what density) fall in each bin."
register("histogram.bin_ct(self: Tensor, bins: int = 100, *, range: float[]? = None, weight: Tensor? = None, "
         "density: bool = False) -> (Tensor, Tensor)", OPAQUE, _count_kernel, shape=_count_rule,
         result_names=("hist", "bin_edges"), doc=_DOC)
register("histogram.bins_tensor(self: Tensor, bins: Tensor, *, weight: Tensor? = None, density: bool = False) "
         "-> (Tensor, Tensor)", OPAQUE, _edges_kernel, shape=_edges_rule, result_names=("hist", "bin_edges"),
         doc=_DOC)


# --- histogramdd: ATen's three ops behind torch.histogramdd (scriptc.functional) ------------------------------

def _points(xp, x, weight):
    """x (..., D) as N points of D coordinates, after PyTorch's checks of input and weight."""
    if x.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{scalar_type_name(from_numpy_dtype(x.dtype))}'")
    if weight is not None:
        if weight.dtype != x.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                               f"have the same dtype, but got input({c_type_name(x.dtype)}), and "
                               f"weight({c_type_name(weight.dtype)})")
        if weight.shape != x.shape[:-1]:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(x.shape)} and weight with shape {list(weight.shape)}")
    return x.reshape(-1, x.shape[-1])


def _linspace(xp, start, end, steps: int, dtype):
    """torch.linspace's values in dtype: the first half counted up from start, the rest down from end."""
    start, end = xp.asarray(start, dtype=dtype), xp.asarray(end, dtype=dtype)
    step = (end - start) / dtype.type(steps - 1)
    i = xp.arange(steps)
    half = steps // 2
    return xp.where(i < half, start + step * i.astype(dtype), end - step * (steps - 1 - i).astype(dtype)).astype(dtype)


def _count_edges(xp, x, bins, range, weight):
    """Each dimension's bins + 1 evenly spaced edges over range (or over the data's extent)."""
    points = _points(xp, x, weight)
    dims = points.shape[1]
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    for dim, count in enumerate(bins):
        if count <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for dimension {dim}")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have {2 * dims} "
                           f"elements, but got {len(range)}")
    edges = []
    for dim, count in enumerate(bins):
        if range is not None:
            low, high = float(range[2 * dim]), float(range[2 * dim + 1])
        elif points.shape[0]:
            low, high = float(points[:, dim].min()), float(points[:, dim].max())
        else:
            low, high = 0.0, 1.0
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{low:g}, {high:g}] is not finite")
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} for "
                               f"dimension {dim}")
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges.append(_linspace(xp, low, high, count + 1, x.dtype))
    return points, edges


def _histogram_dd(xp, points, edges, weight, density: bool):
    """Counts (or weights, or a density) of the points in the grid of bins the edges make. A point lies in a
    dimension's bin i when edges[i] <= v < edges[i + 1], the last bin closed; points outside (or nan) count nowhere."""
    shape = tuple(len(e) - 1 for e in edges)
    if not edges:
        return xp.zeros((), dtype=points.dtype)
    inside = xp.ones(points.shape[0], dtype=bool)
    flat = xp.zeros(points.shape[0], dtype=xp.int64)
    for dim, e in enumerate(edges):
        v = points[:, dim]
        inside &= (v >= e[0]) & (v <= e[-1])
        position = xp.clip(xp.searchsorted(e, v, side="right") - 1, 0, len(e) - 2)
        flat = flat * shape[dim] + position
    counted = None if weight is None else weight.reshape(-1)[inside]
    hist = xp.bincount(flat[inside], weights=counted, minlength=math.prod(shape)).astype(points.dtype)
    hist = hist.reshape(shape)
    if density:
        hist = hist / hist.sum()
        for dim, e in enumerate(edges):
            widths = (e[1:] - e[:-1]).reshape([-1 if d == dim else 1 for d in range(len(edges))])
            hist = hist / widths
    return hist.astype(points.dtype)


def _bin_edges_kernel(xp, x, bins, range=None, weight=None, density=False):
    return _count_edges(xp, x, bins, range, weight)[1]


def _from_counts_kernel(xp, x, bins, range=None, weight=None, density=False):
    points, edges = _count_edges(xp, x, bins, range, weight)
    return _histogram_dd(xp, points, edges, weight, density)


def _from_edges_kernel(xp, x, bins, weight=None, density=False):
    points = _points(xp, x, weight)
    if len(bins) != points.shape[1]:
        raise RuntimeError(f"torch.histogramdd: expected {points.shape[1]} sequences of bin edges for a "
                           f"{points.shape[1]}-dimensional histogram but got {len(bins)}")
    for dim, e in enumerate(bins):
        if e.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.ndim} dimensions "
                               f"in the bins tensor for dimension {dim}")
        if e.dtype != x.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {c_type_name(x.dtype)} and bins for dimension {dim} with dtype "
                               f"{c_type_name(e.dtype)}")
        if e.shape[0] < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {e.shape[0] - 1} for dimension {dim}")
    return _histogram_dd(xp, points, list(bins), weight, density)


def _dd_rule(x, bins, *rest):
    counts = bins if isinstance(bins, (list, tuple)) and all(isinstance(b, int) for b in bins) else None
    return TensorType(x.dtype, None if counts is None else tuple(counts), x.device)


def _edges_list_rule(x, bins, *rest):
    if not isinstance(bins, (list, tuple)) or not all(isinstance(b, int) for b in bins):
        return TensorType(x.dtype, None, x.device)
    return tuple(TensorType(x.dtype, (b + 1,), x.device) for b in bins)


register("_histogramdd_bin_edges(self: Tensor, bins: int[], *, range: float[]? = None, weight: Tensor? = None, "
         "density: bool = False) -> Tensor[]", OPAQUE, _bin_edges_kernel, shape=_edges_list_rule, method=False,
         doc="The bin edges torch.histogramdd uses for bin counts: evenly spaced over range or the data.")
register("_histogramdd_from_bin_cts(self: Tensor, bins: int[], *, range: float[]? = None, weight: Tensor? = None, "
         "density: bool = False) -> Tensor", OPAQUE, _from_counts_kernel, shape=_dd_rule, method=False,
         doc="torch.histogramdd's histogram for bin counts per dimension.")
register("_histogramdd_from_bin_tensors(self: Tensor, bins: Tensor[], *, weight: Tensor? = None, "
         "density: bool = False) -> Tensor", OPAQUE, _from_edges_kernel, shape=_dd_rule, method=False,
         doc="torch.histogramdd's histogram for bin edges per dimension.")
