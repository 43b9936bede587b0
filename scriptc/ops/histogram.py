"""torch.histogram: counts (or weights, or a density) of a tensor's values in bins given as a count with an
optional range, or as bin edges; returns (hist, bin_edges)."""

from __future__ import annotations

from scriptc.types import TensorType, from_numpy_dtype

from . import register
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
