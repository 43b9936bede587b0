"""Cases for torchvision's detection ops (detection.py): nms by a pairwise greedy loop, roi_align by
bilinear sampling point by point - neither shares the kernels' vectorized (separable) form -, and
box_iou_rotated by the convex hull of corners and edge crossings (the kernel clips polygons). torch
without torchvision has no torch.ops.torchvision: the torch comparison skips there."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .cases import Case, rng


def _torchvision(name):
    def call(torch, *args):
        try:
            op = getattr(torch.ops.torchvision, name)
        except (AttributeError, RuntimeError):
            pytest.skip("torchvision's ops are not loaded into this torch")
        return op(*args)
    return call


def _boxes(n, size=20.0):
    corner = rng.uniform(0, size, (n, 2))
    extent = rng.uniform(1, size / 2, (n, 2))
    return np.concatenate([corner, corner + extent], axis=1)


def _iou(a, b):
    width = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    height = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _nms_ref(boxes, scores, threshold):
    keep = []
    for i in sorted(range(len(scores)), key=lambda j: -scores[j]):
        if all(_iou(boxes[i], boxes[k]) <= threshold for k in keep):
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def _bilinear(image, y, x):
    _, height, width = image.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(image.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = min(int(y), height - 1), min(int(x), width - 1)
    y_high, x_high = min(y_low + 1, height - 1), min(x_low + 1, width - 1)
    ly = 0.0 if y_low == height - 1 else y - y_low
    lx = 0.0 if x_low == width - 1 else x - x_low
    return ((1 - ly) * (1 - lx) * image[:, y_low, x_low] + (1 - ly) * lx * image[:, y_low, x_high]
            + ly * (1 - lx) * image[:, y_high, x_low] + ly * lx * image[:, y_high, x_high])


def _roi_align_ref(x, rois, scale, pooled_h, pooled_w, ratio, aligned):
    out = np.zeros((len(rois), x.shape[1], pooled_h, pooled_w))
    shift = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = (v * scale - shift for v in (x1, y1, x2, y2))
        w, h = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        grid_h = ratio if ratio > 0 else math.ceil(h / pooled_h)
        grid_w = ratio if ratio > 0 else math.ceil(w / pooled_w)
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                total = np.zeros(x.shape[1])
                for iy in range(grid_h):
                    for ix in range(grid_w):
                        y = y1 + ph * h / pooled_h + (iy + 0.5) * h / pooled_h / grid_h
                        xx = x1 + pw * w / pooled_w + (ix + 0.5) * w / pooled_w / grid_w
                        total += _bilinear(x[int(b)], y, xx)
                out[k, :, ph, pw] = total / max(grid_h * grid_w, 1)
    return out


def _rectangle(box):
    cx, cy, w, h, degrees = box
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([(cx + dx * c - dy * s, cy + dx * s + dy * c)
                     for dx, dy in ((w / 2, h / 2), (-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2))])


def _inside(point, polygon):
    edges = zip(polygon, np.roll(polygon, -1, axis=0))
    return all((b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) >= -1e-12 for a, b in edges)


def _overlap_area(p, q):
    """The convex hull of the corners inside the other rectangle and the edge crossings."""
    points = [v for v in p if _inside(v, q)] + [v for v in q if _inside(v, p)]
    for a, b in zip(p, np.roll(p, -1, axis=0)):
        for c, d in zip(q, np.roll(q, -1, axis=0)):
            denominator = (b[0] - a[0]) * (d[1] - c[1]) - (b[1] - a[1]) * (d[0] - c[0])
            if abs(denominator) < 1e-15:
                continue
            t = ((c[0] - a[0]) * (d[1] - c[1]) - (c[1] - a[1]) * (d[0] - c[0])) / denominator
            u = ((c[0] - a[0]) * (b[1] - a[1]) - (c[1] - a[1]) * (b[0] - a[0])) / denominator
            if 0 <= t <= 1 and 0 <= u <= 1:
                points.append(a + t * (b - a))
    if len(points) < 3:
        return 0.0
    points = np.array(points)
    centre = points.mean(axis=0)
    points = points[np.argsort(np.arctan2(points[:, 1] - centre[1], points[:, 0] - centre[0]))]
    x, y = points[:, 0], points[:, 1]
    return abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2


def _box_iou_rotated_ref(boxes1, boxes2):
    out = np.zeros((len(boxes1), len(boxes2)))
    for i, a in enumerate(boxes1):
        for j, b in enumerate(boxes2):
            inter = _overlap_area(_rectangle(a), _rectangle(b))
            out[i, j] = inter / (a[2] * a[3] + b[2] * b[3] - inter)
    return out


def _rotated(n):
    return np.concatenate([rng.uniform(0, 6, (n, 2)), rng.uniform(1, 5, (n, 2)), rng.uniform(-180, 180, (n, 1))], 1)


def _rois():
    # inside, partly outside, and beyond the 2 x 9 x 11 maps (scaled by 0.5 they reach past the edges)
    return np.array([[0, 1.0, 2.0, 12.0, 9.0], [1, -3.0, 4.5, 6.0, 20.0], [1, 10.0, 0.0, 30.0, 22.0],
                     [0, 5.0, 5.0, 5.5, 5.2]])


def _features():
    return rng.uniform(-2, 2, (2, 3, 9, 11))


CASES = {
    "nms": [
        Case((_boxes(30), rng.uniform(0, 1, 30), 0.3), _nms_ref, grad=False, torch=_torchvision("nms")),
        Case((_boxes(12, size=5.0), rng.uniform(0, 1, 12), 0.6), _nms_ref, grad=False, torch=_torchvision("nms"),
             label="crowded"),
    ],
    "box_iou_rotated": [
        Case((_rotated(6), _rotated(5)), _box_iou_rotated_ref, grad=False, torch=_torchvision("box_iou_rotated")),
        Case((np.array([[5.0, 5, 4, 2, 0], [5, 5, 4, 2, 90], [0, 0, 2, 2, 45]]),
              np.array([[5.0, 5, 4, 2, 0], [6, 5, 4, 2, 0], [0, 0, 2, 2, 0]])), _box_iou_rotated_ref, grad=False,
             torch=_torchvision("box_iou_rotated"), label="aligned-and-square"),
    ],
    "roi_align": [
        Case((_features(), _rois(), 0.5, 3, 2, -1, False), _roi_align_ref, nograd=(1,),
             torch=_torchvision("roi_align"), label="adaptive"),
        Case((_features(), _rois(), 0.5, 2, 4, 2, True), _roi_align_ref, nograd=(1,),
             torch=_torchvision("roi_align"), label="aligned"),
        Case((_features(), _rois()[[3]], 1.0, 2, 2, 0, False), _roi_align_ref, nograd=(1,),
             torch=_torchvision("roi_align"), label="small-region"),
    ],
}
