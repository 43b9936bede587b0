"""The native lowering of conv_transpose2d in a segment program.

A batch of any size, the image size and channels the recorded call had (checked). Per step of up
to `images` images: their columns, each group's weights transposed - (C_out/g * KH * KW, C_in/g) -
times the images' inputs side by side by the compiled GEMM, then per image the col2im loop
(native/col2im.py), which adds each channel's columns into a padded plane in L1 and copies its
window out with the bias added and the floor (a fused ReLU's 0) applied (and a ReLU6's ceiling).
Where an image's columns are small (DCGAN's middle layers: 16-64 input positions under 2-8 MB of
weights), several images share one GEMM, so that the weights stream from memory once for them all; one image at a time the
GEMM reads the input in place. Images of 1x1 (DCGAN's first layer) need no col2im: one GEMM of the
batch by the weights as they are. 4x4 stride-2 ones of enough channels (DCGAN's) multiply by
Winograd's F(2x2, 2x2) instead, a phase of the output at a time (winograd_phase_products.py).
"""

from __future__ import annotations

import math

import numpy as np

from scriptc.native import col2im, gemm
from scriptc.native import program as native
from scriptc.native.heads import GEMM_SPLIT_MIN, gemm_runs
from scriptc.native.loops import loop_function

from .convolution_lowering import image_output
from .groups import PARALLEL_MIN_ELEMENTS
from .program_values import NotNative, Builder, constant_array, constant_of, dense, TensorValue
from .winograd_phase_products import transposed_products, transposed_takes

# The columns of one step's images: what their GEMM writes and col2im reads back, in L2/L3.
COLUMN_BYTES = 2 << 20
# The most images a step takes (each one's gather and col2im launch is a record of the program).
MAX_IMAGES = 16
# The weights go through the GEMM a slice of rows of about this many bytes at a time (see its launch).
WEIGHT_SLICE_BYTES = 256 << 10
# Past this many groups the program would hold a GEMM launch per group and step: the steps run such
# a convolution instead.
MAX_GROUPS = 64


def transposed_geometry(shape: tuple, weight_shape: tuple, stride, padding, output_padding, groups,
                        dilation) -> list[int] | None:
    """[SH, SW, PH, PW, DH, DW, OH, OW] of conv_transpose2d of an input of `shape` (N, C, H, W) with
    weights of `weight_shape`, or None where the op would refuse the arguments (it raises then)."""
    def pair(value):
        value = [value] * 2 if type(value) is int else list(value) if isinstance(value, (list, tuple)) else None
        return value if value is not None and len(value) == 2 and all(type(v) is int for v in value) else None
    stride, padding, output_padding, dilation = (pair(v) for v in (stride, padding, output_padding, dilation))
    if None in (stride, padding, output_padding, dilation) or type(groups) is not int or groups < 1:
        return None
    if len(shape) != 4 or len(weight_shape) != 4 or weight_shape[0] != shape[1] or shape[1] % groups:
        return None
    if min(stride + dilation) < 1 or min(padding + output_padding) < 0 or any(
            op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        return None
    sizes = [(i - 1) * s - 2 * p + d * (k - 1) + 1 + op for i, s, p, d, k, op in
             zip(shape[2:], stride, padding, dilation, weight_shape[2:], output_padding)]
    if min(sizes) <= 0:
        return None
    return stride + padding + dilation + sizes


def conv_transpose(builder: Builder, args: list, x_value: np.ndarray, bounds: tuple | None) -> TensorValue:
    """conv_transpose2d(args) of a batch like `x_value` in its channels and image size,
    maximum(result, floor) where bounds (floor, ceiling, slope) give a floor, then minimum(that, ceiling)
    where the ceiling is not None; where(result > 0, result, result * slope) where they give a slope
    (see the module docstring)."""
    x = dense(builder, args[0])
    weight = constant_array(args[1])
    bias = None if args[2] is None else constant_array(args[2])
    stride, padding, output_padding, groups, dilation = (constant_of(a) for a in args[3:8])
    if x.rank != 4 or weight.dtype != x.dtype or x.dtype.name not in col2im.FUNCTIONS or not gemm_runs():
        raise NotNative("a transposed convolution not of 4-D floats of one dtype, or no compiled GEMM")
    if bias is not None and (bias.dtype != x.dtype or bias.shape != (weight.shape[1] * groups,)):
        raise NotNative("a bias the op refuses")
    geometry = transposed_geometry(x_value.shape, weight.shape, stride, padding, output_padding, groups, dilation)
    if geometry is None:
        raise NotNative("transposed convolution arguments the op refuses")
    if groups > MAX_GROUPS:
        raise NotNative("a transposed convolution of many groups")
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    _, c, h, w = x_value.shape
    _, per_group, kh, kw = weight.shape
    o = per_group * groups
    out, bounds_pointer, mode = image_output(builder, x, (c, h, w), (o, oh, ow), bounds)
    if transposed_takes(x_value.shape, weight.shape, geometry, groups, x.dtype):
        bias_pointer = builder.address_of(np.zeros(o, x.dtype) if bias is None else np.ascontiguousarray(bias))
        transposed_products(builder, x, (c, h, w), weight, out, bias_pointer, bounds_pointer, mode)
        return out
    if (h, w, ph, pw, dh, dw, oh, ow, groups) == (1, 1, 0, 0, 1, 1, kh, kw, 1):
        _from_points(builder, x, weight, bias, out, bounds_pointer, mode)
        return out
    itemsize, positions = x.dtype.itemsize, h * w
    images = max(1, min(MAX_IMAGES, COLUMN_BYTES // max(1, o * kh * kw * positions * itemsize)))
    wide = images * positions  # the row stride of the inputs side by side and of the columns
    rows, depth = per_group * kh * kw, c // groups
    # Each group's weights as (rows, depth): row (k, i, j) of output channel k of the group.
    weights = np.ascontiguousarray(weight.reshape(groups, depth, rows).transpose(0, 2, 1))
    bias_pointer = builder.address_of(np.zeros(1, x.dtype) if bias is None else np.ascontiguousarray(bias))
    words = col2im.col2im_meta(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, wide, mode,
                               0 if bias is None else 1)
    col2im_meta = builder.block(len(words))
    builder.template[col2im_meta:col2im_meta + len(words)] = words
    columns = builder.alloc(x.dtype, [builder.const(o * kh * kw * wide)])
    planes = builder.alloc(x.dtype, [builder.const(o * math.prod(col2im.plane_size(h, w, kh, kw, oh, ow, sh, sw, dh, dw,
                                                                                   ph, pw)))])
    side_by_side = builder.alloc(x.dtype, [builder.const(c * wide)]) if images > 1 else None

    compute, const = builder.compute, builder.const
    index = builder.register()
    first, count, close = builder.batch_steps(x.dims[0], images)
    if side_by_side is None:
        source = builder.register()
        compute.append(("ADDR", source, x.pointer, first, c * positions * itemsize))
    else:
        source = side_by_side.pointer
        builder.each_image_of_step(images, count, first, index,
                                   lambda image: _gather(builder, x, image, index, side_by_side, (c, positions, wide)))
    width, vectors = builder.register(), builder.register()
    lanes = gemm.vector_columns(x.dtype.name)
    compute.append(("MUL", width, count, const(positions)))
    compute.append(("ADD", vectors, width, const(lanes - 1)))
    compute.append(("DIV", vectors, vectors, const(lanes)))
    step = wide if images > 1 else positions
    work = const(max(1, rows * depth * wide // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    zero = builder.address_of(np.zeros(1, x.dtype))
    # The weights a slice of rows at a time, each slice in L2 while every panel of the columns goes by
    # (the GEMM reads its a once per panel of 48 columns: 2-8 MB of DCGAN's weights came from L3).
    slice_rows = max(gemm.ROWS, WEIGHT_SLICE_BYTES // (depth * itemsize) // gemm.ROWS * gemm.ROWS)
    gemm_loop = const(loop_function("gemm", x.dtype.name))
    for g in range(groups):
        for row in range(0, rows, slice_rows):
            count_rows = min(slice_rows, rows - row)
            ptrs, meta = builder.block(5), builder.block(7)
            group_source, group_columns = builder.register(), builder.register()
            compute.append(("ADDR", group_source, source, const(g * depth * step), itemsize))
            compute.append(("ADDR", group_columns, columns.pointer, const((g * rows + row) * wide), itemsize))
            builder.copy_into(ptrs, [builder.address_of(weights[g, row:row + count_rows]), group_source,
                                     group_columns, zero, zero], compute)
            builder.copy_into(meta, [const(count_rows), const(depth), width, native.ZERO, native.ZERO, const(step),
                                     const(wide)], compute)
            compute.append(("SPLIT", gemm_loop, vectors, ptrs, meta, work))
    col2im_loop = const(loop_function("col2im", x.dtype.name))
    col2im_work = const(max(1, o * kh * kw * positions))

    def scatter(image: int) -> None:
        ptrs, image_columns, image_out = builder.block(5), builder.register(), builder.register()
        compute.append(("ADDR", image_columns, columns.pointer, const(image * positions), itemsize))
        compute.append(("ADDR", image_out, out.pointer, index, o * oh * ow * itemsize))
        builder.copy_into(ptrs, [image_columns, image_out, bias_pointer, bounds_pointer, planes.pointer], compute)
        compute.append(("SPLIT", col2im_loop, const(o), ptrs, col2im_meta, col2im_work))
    builder.each_image_of_step(images, count, first, index, scatter)
    close()
    return out


def _gather(builder: Builder, x: TensorValue, image: int, index: int, side_by_side: TensorValue,
            sizes: tuple) -> None:
    """Image `image` of the step's (its index in the batch in `index`)'s C rows of H*W, into its
    place among the step's inputs side by side."""
    c, positions, wide = sizes
    itemsize, const, compute = x.dtype.itemsize, builder.const, builder.compute
    x_image, target = builder.register(), builder.register()
    compute.append(("ADDR", x_image, x.pointer, index, c * positions * itemsize))
    compute.append(("ADDR", target, side_by_side.pointer, const(image * positions), itemsize))
    compute.append(("COPY2D", target, const(wide * itemsize), x_image, const(positions * itemsize), const(c),
                    const(positions * itemsize)))


def _from_points(builder: Builder, x: TensorValue, weight: np.ndarray, bias: np.ndarray | None, out: TensorValue,
                 bounds_pointer: int, mode: int) -> None:
    """An input of 1x1 images, unpadded (DCGAN's first layer, from its latent vectors): each image's
    output is its C values times the weights as they are, (C, O*KH*KW), with nothing to add up - one
    GEMM for the batch, the bias a last row of the weights times a column of ones beside the input."""
    c, o, kh, kw = weight.shape
    itemsize, const, compute = x.dtype.itemsize, builder.const, builder.compute
    width = o * kh * kw
    matrix = weight.reshape(c, width)
    source, depth = x.pointer, c
    if bias is not None:
        matrix = np.concatenate([matrix, np.repeat(bias, kh * kw)[None]])
        depth = c + 1
        beside = builder.alloc(x.dtype, [x.dims[0], const(depth)])
        ones = builder.register()
        compute.append(("COPY2D", beside.pointer, const(depth * itemsize), x.pointer, const(c * itemsize), x.dims[0],
                        const(c * itemsize)))
        compute.append(("ADDR", ones, beside.pointer, const(c), itemsize))
        compute.append(("COPY2D", ones, const(depth * itemsize), builder.address_of(np.ones(1, x.dtype)), native.ZERO,
                        x.dims[0], const(itemsize)))
        source = beside.pointer
    zero = builder.address_of(np.zeros(1, x.dtype))
    ptrs, meta = builder.block(5), builder.block(7)
    builder.copy_into(ptrs, [source, builder.address_of(np.ascontiguousarray(matrix)), out.pointer, zero, bounds_pointer],
                      compute)
    builder.copy_into(meta, [x.dims[0], const(depth), const(width), const(mode), native.ZERO, const(width),
                             const(width)], builder.shape)
    lanes = gemm.vector_columns(x.dtype.name)
    work = builder.arithmetic("DIV", builder.product([x.dims[0], const(depth * width)]),
                              const(max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    compute.append(("SPLIT", const(loop_function("gemm", x.dtype.name)), const(-(-width // lanes)), ptrs, meta, work))
