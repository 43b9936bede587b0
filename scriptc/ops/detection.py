"""torchvision's detection ops, reached as torch.ops.torchvision.<name> (torchvision.ops.nms,
box_iou and roi_align call them there): nms, the greedy suppression of overlapping boxes,
box_iou_rotated, the IoU of rotated rectangles, and roi_align, Mask R-CNN's bilinear average pooling
of regions. Written from their published semantics (torchvision's
CPU kernels): roi_align's bilinear sampling is separable, so each region is two small matrices, one
per axis, around the feature map - output = Ay @ X @ Ax^T, and the gradient is their transpose."""

from __future__ import annotations

import math

from scriptc.types import TensorType, int64

from . import register
from .rules import is_known
from .schema import OPAQUE


def _check_nms(dets, scores):
    if dets.ndim != 2:
        raise RuntimeError(f"boxes should be a 2d tensor, got {dets.ndim}D")
    if dets.shape[1] != 4:
        raise RuntimeError(f"boxes should have 4 elements in dimension 1, got {dets.shape[1]}")
    if scores.ndim != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.ndim}D")
    if dets.shape[0] != scores.shape[0]:
        raise RuntimeError(f"boxes and scores should have same number of elements in dimension 0, got "
                           f"{dets.shape[0]} and {scores.shape[0]}")


def _nms_kernel(xp, dets, scores, iou_threshold):
    _check_nms(dets, scores)
    order = xp.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (dets[:, i] for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    suppressed = xp.zeros(len(order), dtype=bool)
    keep = []
    for position, i in enumerate(order):
        if suppressed[position]:
            continue
        keep.append(i)
        rest = order[position + 1:]
        width = xp.maximum(xp.minimum(x2[i], x2[rest]) - xp.maximum(x1[i], x1[rest]), 0)
        height = xp.maximum(xp.minimum(y2[i], y2[rest]) - xp.maximum(y1[i], y1[rest]), 0)
        inter = width * height
        union = areas[i] + areas[rest] - inter
        # two empty boxes: torchvision's 0 / 0 is NaN, which suppresses nothing
        overlap = xp.where(union > 0, inter / xp.where(union > 0, union, 1), 0)
        suppressed[position + 1:] |= overlap > iou_threshold
    return xp.asarray(keep, dtype=xp.int64)


register("nms(dets: Tensor, scores: Tensor, iou_threshold: float) -> Tensor", OPAQUE, _nms_kernel,
         shape=lambda dets, scores, iou_threshold: TensorType(int64, (None,), dets.device),
         method=False, function=False,
         doc="torchvision's nms: the indices of the boxes (x1, y1, x2, y2) kept, by decreasing score, each "
             "box dropped whose IoU with a kept higher-scoring box exceeds iou_threshold.")


def _corners(box):
    """A rotated box (cx, cy, w, h, degrees counter-clockwise) as its 4 corners, counter-clockwise."""
    cx, cy, w, h, degrees = (float(v) for v in box)
    cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    half = [(w / 2, h / 2), (-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2)]
    return [(cx + dx * cos - dy * sin, cy + dx * sin + dy * cos) for dx, dy in half]


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _clipped(polygon, edge_start, edge_end):
    """The part of a convex polygon left of the directed edge (one Sutherland-Hodgman step)."""
    kept = []
    for i, current in enumerate(polygon):
        previous = polygon[i - 1]
        inside_now, inside_before = _cross(edge_start, edge_end, current) >= 0, _cross(edge_start, edge_end, previous) >= 0
        if inside_now != inside_before:
            d1, d2 = _cross(edge_start, edge_end, previous), _cross(edge_start, edge_end, current)
            t = d1 / (d1 - d2)
            kept.append((previous[0] + t * (current[0] - previous[0]), previous[1] + t * (current[1] - previous[1])))
        if inside_now:
            kept.append(current)
    return kept


def _polygon_area(polygon):
    return abs(sum(p[0] * q[1] - q[0] * p[1] for p, q in zip(polygon, polygon[1:] + polygon[:1]))) / 2


def _box_iou_rotated_kernel(xp, boxes1, boxes2):
    for boxes, name in ((boxes1, "boxes1"), (boxes2, "boxes2")):
        if boxes.ndim != 2 or boxes.shape[1] != 5:
            raise RuntimeError(f"{name} must be a 2D tensor of shape [N, 5], got {list(boxes.shape)}")
    out = xp.zeros((boxes1.shape[0], boxes2.shape[0]), dtype=boxes1.dtype)
    for i, a in enumerate(boxes1):
        corners_a, area_a = _corners(a), float(a[2] * a[3])
        for j, b in enumerate(boxes2):
            area_b = float(b[2] * b[3])
            if area_a < 1e-14 or area_b < 1e-14:
                continue  # an empty box overlaps nothing (torchvision's 0)
            overlap, corners_b = corners_a, _corners(b)
            for k in range(4):
                if not overlap:
                    break
                overlap = _clipped(overlap, corners_b[k], corners_b[(k + 1) % 4])
            inter = _polygon_area(overlap) if len(overlap) > 2 else 0.0
            out[i, j] = inter / (area_a + area_b - inter)
    return out


register("box_iou_rotated(boxes1: Tensor, boxes2: Tensor) -> Tensor", OPAQUE, _box_iou_rotated_kernel,
         shape=lambda a, b: TensorType(a.dtype, (a.shape[0] if a.shape else None, b.shape[0] if b.shape else None),
                                       a.device),
         method=False, function=False,
         doc="torchvision's box_iou_rotated: the [N, M] IoU of rotated boxes (cx, cy, w, h, angle in degrees, "
             "counter-clockwise).")


def _axis_weights(xp, start, bin_size, pooled: int, grid: int, size: int, dtype):
    """(pooled, size): the mean over one bin's `grid` samples of their linear interpolation weights along
    one axis; a sample beyond [-1, size] weighs nothing (torchvision's bilinear_interpolate)."""
    weights = xp.zeros((pooled, size), dtype=dtype)
    if grid == 0:
        return weights
    bins = xp.arange(pooled)[:, None]
    samples = xp.arange(grid)[None, :]
    at = start + bins * bin_size + (samples + 0.5) * bin_size / grid
    valid = (at >= -1.0) & (at <= size)
    at = xp.maximum(at, 0.0)
    low = at.astype(xp.int64)
    clamped = low >= size - 1
    low = xp.where(clamped, size - 1, low)
    high = xp.where(clamped, size - 1, low + 1)
    frac = xp.where(clamped, 0.0, at - low)
    rows = xp.broadcast_to(bins, at.shape)
    xp.add.at(weights, (rows, low), xp.where(valid, 1.0 - frac, 0.0) / grid)
    xp.add.at(weights, (rows, high), xp.where(valid, frac, 0.0) / grid)
    return weights


def _region_weights(xp, roi, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned, height, width,
                    dtype):
    offset = 0.5 if aligned else 0.0
    start_w, start_h, end_w, end_h = (float(v) * spatial_scale - offset for v in roi[1:5])
    roi_width, roi_height = end_w - start_w, end_h - start_h
    if not aligned:
        roi_width, roi_height = max(roi_width, 1.0), max(roi_height, 1.0)
    grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_height / pooled_height)
    grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_width / pooled_width)
    rows = _axis_weights(xp, start_h, roi_height / pooled_height, pooled_height, grid_h, height, dtype)
    cols = _axis_weights(xp, start_w, roi_width / pooled_width, pooled_width, grid_w, width, dtype)
    return int(roi[0]), rows, cols


def _check_rois(x, rois):
    if x.ndim != 4:
        raise RuntimeError(f"roi_align expects input of shape [N, C, H, W], got {x.ndim}D")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise RuntimeError("rois must have shape as Tensor[K, 5]")


def _roi_align_kernel(xp, x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    _check_rois(x, rois)
    out = xp.zeros((rois.shape[0], x.shape[1], pooled_height, pooled_width), dtype=x.dtype)
    for k, roi in enumerate(rois):
        image, rows, cols = _region_weights(xp, roi, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                                            aligned, x.shape[2], x.shape[3], x.dtype)
        out[k] = xp.einsum("ph,chw,qw->cpq", rows, x[image], cols)
    return out


def _roi_align_grad(ctx, g):
    xp, x, rois = ctx.xp, ctx.input, ctx.rois
    grad = xp.zeros(x.shape, dtype=g.dtype)
    for k, roi in enumerate(rois):
        image, rows, cols = _region_weights(xp, roi, ctx.spatial_scale, ctx.pooled_height, ctx.pooled_width,
                                            ctx.sampling_ratio, ctx.aligned, x.shape[2], x.shape[3], g.dtype)
        grad[image] += xp.einsum("ph,cpq,qw->chw", rows, g[k], cols)
    return (grad, None, None, None, None, None, None)


def _roi_align_rule(x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    regions = rois.shape[0] if rois.shape is not None else None
    channels = x.shape[1] if x.shape is not None and len(x.shape) == 4 else None
    bins = tuple(size if is_known(size) else None for size in (pooled_height, pooled_width))
    return TensorType(x.dtype, (regions, channels) + bins, x.device)


register("roi_align(input: Tensor, rois: Tensor, spatial_scale: float, pooled_height: int, pooled_width: int, "
         "sampling_ratio: int, aligned: bool) -> Tensor", OPAQUE, _roi_align_kernel, shape=_roi_align_rule,
         grad=_roi_align_grad, save=("rois",), method=False, function=False,
         doc="torchvision's roi_align: for each region (batch index, x1, y1, x2, y2) of rois, scaled by "
             "spatial_scale, the [C, pooled_height, pooled_width] average of bilinear samples of its image's "
             "feature map (sampling_ratio per bin and axis, or ceil(region size / bins) when <= 0; aligned "
             "shifts by half a pixel).")
