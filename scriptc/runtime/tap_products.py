"""A convolution's tap products: one GEMM over shifted views of its padded image's phases, no im2col.

The padded image is split into the stride's phases (one copy, about the input's size, where im2col's
is KH*KW times it); the view of a tap over the outputs is then a run of consecutive elements of one
phase - for an output grid whose rows are as long as a phase's (WQ), of which the first OW are the
output's - so one GEMM whose rows of b are those views (the GEMM's row table) computes every output,
and cuts the rows to OW as it stores them. Where WQ is much longer than OW (small planes) the extra
columns cost more than im2col saves. A 3x3 stride-1 convolution of enough channels on such a phase
multiplies by Winograd's F(2x2, 3x3) instead (winograd_products.py: 2.25x fewer multiplies).
A producer whose one reader multiplies so may write its output straight into that reader's phase
(padded_planes.py); convolution_lowering.py decides which convolutions run here.
"""

from __future__ import annotations

import numpy as np

from scriptc.native import gemm, im2col, strided_columns
from scriptc.native.heads import GEMM_SPLIT_MIN
from scriptc.native.loops import loop_function

from .groups import PARALLEL_MIN_ELEMENTS
from .padded_planes import Layout, PaddedPlanes, PhaseLayout
from .program_values import Builder, TensorValue
from .winograd_products import WinogradProducts
from .winograd_products import takes as winograd_takes

# A convolution's tap products (tap_products) compute rows of WQ outputs where the output's are OW
# long: they run where WQ / OW is at most this (im2col's copy of KH*KW times the input costs more
# than the columns cut away), on planes of at least this many outputs.
TAP_WIDTH_RATIO = (5, 4)
TAP_MIN_POSITIONS = 64


def tap_plan(image: tuple, weight_shape: tuple, geometry) -> tuple:
    """(HQ, WQ, offsets) of a convolution's tap products: its padded image split into the stride's
    SH*SW phases (each HQ x WQ; phase (i, j) holds the padded image's rows i, i + SH, ... and columns
    j, j + SW, ...), and per row of the weights' (channel, ky, kx) where in the phases its tap's
    view starts: output (oy, ox) of that tap is phases[offset + oy * WQ + ox]."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    c, h, w = image
    per_group, kh, kw = weight_shape[1:]
    hq, wq = -(-(h + 2 * ph) // sh), phase_width(w, kw, geometry)
    phase_plane = hq * wq
    offsets = [(ci * sh * sw + (ky * dh) % sh * sw + (kx * dw) % sw) * phase_plane + (ky * dh) // sh * wq +
               (kx * dw) // sw for ci in range(per_group) for ky in range(kh) for kx in range(kw)]
    return hq, wq, np.array(offsets, dtype=np.int64)


def phase_width(w: int, kw: int, geometry) -> int:
    """WQ, the length of a phase's rows: the padded row's W + 2 * PW over the stride - or at stride 1,
    W + PW: every row starts with its PW zeros of left padding, which serve the row before as its
    right padding (a tap's view past a row's end reads the next row's, the next channel's first
    row's, or the zeroed slack after the last), where the outputs are no wider than WQ (PW <= (KW -
    1) * DW). The GEMM computes WQ outputs a row for the OW kept: super-res's 3x3 layers 65 for 64,
    where 66 cost 1.5% more."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    if (sh, sw) == (1, 1) and pw <= (kw - 1) * dw:
        return w + pw
    return -(-(w + 2 * pw) // sw)


def taps_pay(image: tuple, kernel: tuple, geometry) -> bool:
    """Whether the tap products run a convolution: one with a window (a 1x1 of stride 1 multiplies
    the image itself), outputs enough, and rows of WQ not too much longer than the output's."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    if (*kernel, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0) or oh * ow < TAP_MIN_POSITIONS:
        return False
    return phase_width(image[1], kernel[1], geometry) * TAP_WIDTH_RATIO[1] <= ow * TAP_WIDTH_RATIO[0]


def tap_products(builder: Builder, x: TensorValue, image: tuple, weight, out: TensorValue, image_stride: int,
                 bias_pointer: int, bounds_pointer: int, mode: int, geometry, has_bias: bool, plan: tuple,
                 source: PaddedPlanes | None = None, into=None) -> None:
    """Per image: its phases (the padded image split by the stride's phases: im2col with a window
    of the stride's size), then one GEMM whose rows of b are the taps' shifted views of them
    (gemm.rows_function), over rows of WQ outputs that it cuts to OW as it stores them. `source`:
    x is planes a producer wrote padded as the phase reads them (padded_planes.py), multiplied in
    place; `into` a PaddedPlanes that took the output: the GEMM stores its rows of WQ whole there,
    the columns past OW zeroed, and the padding rows around them are cleared - or, into a reader's
    stride-2 phases (a PhaseLayout), the image split by stride-2 phases and one GEMM per phase of the
    output (PhaseLayout.taps). Where winograd_products takes the convolution, its transforms and GEMMs
    multiply the phase instead. `image_stride`: elements from one image of `out` to the next."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    o, per_group, kh, kw = weight.shape
    c, h, w = image
    hq, wq, offsets = plan
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    compute, const = builder.compute, builder.const
    depth = per_group * kh * kw
    lanes = gemm.vector_columns(dtype)
    whole_rows = isinstance(into, PaddedPlanes) and into.values is out
    phased = whole_rows and isinstance(into.layout, PhaseLayout)
    if phased:
        (sh, sw), (hq, wq) = (2, 2), ((h + 2 * ph + 1) // 2, (w + 2 * pw + 1) // 2)
        wide, (starts, cleared) = into.layout.image[0] // 2 * wq, into.layout.passes()
        kept_lanes = kept_columns(wide, wq, into.layout.image[1] // 2, lanes)[0]
        passes = [(into.layout.taps(a, b, (c, hq, wq), (kh, kw)), start, wide, kept_lanes,
                   np.arange(0, wide, lanes, dtype=np.int64), 4 * into.layout.plane) for a, b, start in starts]
    else:
        kept_lanes, kept_at = kept_columns(oh * wq, wq, ow, lanes)
        if whole_rows:
            kept_at = np.arange(0, oh * wq, lanes, dtype=np.int64)
        passes = [(offsets, 0, oh * wq, kept_lanes, kept_at, into.layout.plane if whole_rows else oh * ow)]
    if source is None:
        # a tap's view runs past its phase by up to (KW - 1) * DW // SW elements in the columns cut away
        slack = (kw - 1) * dw // sw + 1
        phases = builder.alloc(x.dtype, [const(c * sh * sw * hq * wq + slack)])
        words = im2col.conv2d_meta(h, w, sh, sw, hq, wq, sh, sw, 1, 1, ph, pw)
        phase_meta = builder.block(len(words))
        builder.template[phase_meta:phase_meta + len(words)] = words
        tail = builder.register()
        compute.append(("ADDR", tail, phases.pointer, const(c * sh * sw * hq * wq), itemsize))
        compute.append(("ZERO", tail, const(slack * itemsize)))
    weights = np.ascontiguousarray(weight.reshape(o, depth))
    fewer_multiplies = WinogradProducts(builder, weight, x.dtype, (oh, ow), (hq * wq, wq), bias_pointer, has_bias,
                                        bounds_pointer, mode) if winograd_takes(weight.shape, geometry, dtype) else None

    def each(image_index):
        out_image = builder.register()
        compute.append(("ADDR", out_image, out.pointer, image_index, image_stride * itemsize))
        if phased:
            into.layout.clear(builder, out_image, cleared, itemsize)
        elif whole_rows:
            planes = builder.register()
            compute.append(("ADDR", planes, into.base, image_index, into.layout.image_elements * itemsize))
            into.clear_padding(builder, planes, itemsize)
        if source is None:
            x_image, phase_image = builder.register(), phases.pointer
            compute.append(("ADDR", x_image, x.pointer, image_index, c * h * w * itemsize))
            phase_ptrs = builder.block(2)
            builder.copy_into(phase_ptrs, [x_image, phases.pointer], compute)
            compute.append(("SPLIT", const(columns_function(dtype, sw, wq)), const(c), phase_ptrs, phase_meta,
                            const(c * sh * sw * hq * wq)))
        else:
            phase_image = builder.register()
            compute.append(("ADDR", phase_image, source.base, image_index, source.layout.image_elements * itemsize))
        if fewer_multiplies is not None and not phased:
            fewer_multiplies.image(phase_image, out_image, into.layout.plane if whole_rows else oh * ow,
                                   wq if whole_rows else ow, whole_rows)
            return
        for taps, start, wide, kept_lanes, kept_at, out_plane in passes:
            target = builder.register()
            compute.append(("ADDR", target, out_image, const(start), itemsize))
            ptrs, meta = builder.block(8), builder.block(8)
            builder.copy_into(ptrs, [builder.address_of(weights), phase_image, target, bias_pointer, bounds_pointer,
                                     builder.address_of(taps), builder.address_of(kept_lanes),
                                     builder.address_of(kept_at)], compute)
            builder.template[meta:meta + 8] = [o, depth, wide, mode, 1 if has_bias else 0, hq * wq, out_plane,
                                               int(whole_rows)]
            work = const(max(1, o * depth * wide // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
            compute.append(("SPLIT", const(gemm.rows_function(dtype)), const(-(-wide // lanes)), ptrs, meta, work))
    each_image(builder, x, each)


def kept_columns(columns: int, wq: int, ow: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per vector of `lanes` of the tap GEMM's columns (rows of WQ outputs, `columns` of them), the
    bits of the lanes the output keeps (the first OW of each row) and where in a row of the output
    (OH*OW) the first of them goes."""
    first = np.arange(0, columns, lanes)
    at = first // wq * ow + np.minimum(first % wq, ow)
    column = first[:, None] + np.arange(lanes)
    kept = (column < columns) & (column % wq < ow)
    return (kept * (1 << np.arange(lanes))).sum(1).astype(np.int32), at.astype(np.int64)


def columns_function(dtype: str, sw: int, ow: int) -> int:
    """The loop that copies a convolution's im2col columns, or the phases of a strided tap product
    (im2col's meta): strided_columns.py's for the strides and row lengths it takes, else im2col.py's."""
    return loop_function("strided_columns" if strided_columns.takes(dtype, sw, ow) else "im2col", dtype)


def each_image(builder: Builder, x: TensorValue, body) -> None:
    """body(register of the image's index) for each image of x's batch: a loop of the program."""
    image, _, close = builder.batch_steps(x.dims[0], 1)
    body(image)
    close()


def padded_output(channels: int, image: tuple, geometry, plan) -> Layout | None:
    """The padded planes a convolution writes its output into for a reader of the same padding
    (padded_planes.py), where its own products are the tap products at stride 1 over rows of W + PW
    (those planes' rows) and its output is the size of its input; None where it cannot."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    if plan is None or (sh, sw) != (1, 1) or (oh, ow) != tuple(image) or ph < 1 or plan[1] != ow + pw:
        return None
    return Layout(channels, (oh, ow), (ph, pw))


def writes_phases(layout: PhaseLayout, dtype: str, weight_shape: tuple, geometry, plan) -> bool:
    """Whether a convolution writes its output as the stride-2 phases of `layout` (PhaseLayout):
    one of stride 1 whose output is its input's size, multiplied by the tap products (not Winograd's),
    whose own input's stride-2 phases have rows of the layout's WQ (_phase_products)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    return plan is not None and (sh, sw, dh, dw) == (1, 1, 1, 1) and layout.channels == weight_shape[0] and \
        layout.image == (oh, ow) and (2 * ph + 1, 2 * pw + 1) == tuple(weight_shape[2:]) and \
        (ow + 2 * pw + 1) // 2 == layout.rows[1] and not winograd_takes(weight_shape, geometry, dtype)


def reads_in_place(layout, image: tuple, weight_shape: tuple, geometry, plan) -> bool:
    """Whether the tap products of `plan` read planes of `layout` as their phase: the same image,
    padding and rows, and the zeros after the last plane covering how far a tap's view runs past it
    (a Layout at stride 1, a PhaseLayout at stride 2)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    kw = weight_shape[3]
    if isinstance(layout, PhaseLayout):
        return (sh, sw) == (2, 2) and layout.channels == image[0] and layout.image == tuple(image[1:]) and \
            layout.padding == (ph, pw) and tuple(plan[:2]) == layout.rows and (kw - 1) * dw // 2 + 1 <= layout.slack
    return (sh, sw) == (1, 1) and layout.channels == image[0] and layout.image == tuple(image[1:]) and \
        layout.padding == (ph, pw) and tuple(plan[:2]) == layout.rows and (kw - 1) * dw + 1 <= layout.first
