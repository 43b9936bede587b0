"""A 4x4 stride-2 convolution's products by Winograd's F(2x2, 2x2) over its phases (native/winograd_phases.py),
in a segment program: per step of several images, each image's phases (the tap products' copy,
tap_products.tap_plan), the input transform of them all, the 9 GEMMs of the transformed weights by
it (the heads' GEMM loop, the images' tiles side by side in its columns) and the output transform,
which adds the bias, applies the epilogue and stores each image's output.

9 multiplies where the direct sums take 16 (DCGAN's discriminator: every layer but the first and
the last). The images of a step are as many as keep V (9 x 4C x their tiles) within STEP_BYTES,
most of all as many whose tiles fill the GEMM's panels exactly: the GEMM streams its weights (here
9 x O x 4C, 19 MB for 256 -> 512 channels) once per panel, a part-filled one included.
"""

from __future__ import annotations

import numpy as np

from scriptc.native import gemm, im2col, winograd_phases
from scriptc.native.heads import GEMM_SPLIT_MIN

from .groups import PARALLEL_MIN_ELEMENTS
from .program_values import Builder, TensorValue
from .tap_products import columns_function
from .winograd_products import position_products

STEP_BYTES = 2 << 20
MAX_IMAGES = 16
# multiply-adds over the elements a SPLIT's work counts (as the tap products')
_WORK_SCALE = max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)


def takes(x_shape: tuple, weight_shape: tuple, geometry, groups: int, dtype) -> bool:
    """Whether a convolution of a batch of x_shape multiplies so (winograd_phases.takes)."""
    o, per_group, kh, kw = weight_shape
    return groups == 1 and winograd_phases.takes((kh, kw), geometry, tuple(x_shape[2:]), (per_group, o),
                                                 np.dtype(dtype).name)


def step_images(tiles: int, channels: int, dtype: str) -> int:
    """Images a step: the most whose V (9 x `channels` x their `tiles` each) fits in STEP_BYTES, of
    those whose tiles fill whole panels of the GEMM where any do; one at least."""
    per_image = 9 * channels * tiles * np.dtype(dtype).itemsize
    fits = [k for k in range(1, MAX_IMAGES + 1) if k * per_image <= STEP_BYTES] or [1]
    panel = gemm.VECTORS * gemm.vector_columns(dtype)
    return max([k for k in fits if k * tiles % panel == 0] or fits)


def phase_products(builder: Builder, x: TensorValue, image: tuple, weight: np.ndarray, out: TensorValue,
                   image_stride: int, bias_pointer: int, bounds_pointer: int, mode: int, geometry) -> None:
    """out = the convolution of x (a batch of `image`: channels, height, width) by `weight` (O, C, 4,
    4), plus the bias at bias_pointer (O values), through the epilogue (bounds_pointer, mode);
    `image_stride`: elements from one image of `out` to the next (each image's planes contiguous)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    o = weight.shape[0]
    c, h, w = image
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    compute, const = builder.compute, builder.const
    hq, wq, phase_channels = oh + 1, ow + 1, 4 * c
    plane, image_tiles = hq * wq, (oh // 2) * (ow // 2)
    images = step_images(image_tiles, max(phase_channels, o), dtype)
    lanes = winograd_phases.vector_tiles(dtype)
    row = -(-images * image_tiles // lanes) * lanes
    phases = builder.alloc(x.dtype, [const(images * phase_channels * plane)])
    inputs = builder.alloc(x.dtype, [const(9 * phase_channels * row)])
    products = builder.alloc(x.dtype, [const(9 * o * row)])
    tile_rows, tile_columns = np.meshgrid(np.arange(oh // 2), np.arange(ow // 2), indexing="ij")
    each_image = np.arange(images)[:, None]
    in_table, out_table = (np.zeros(row, np.int64) for _ in range(2))
    in_table[:images * image_tiles] = (each_image * phase_channels * plane +
                                       (2 * tile_rows * wq + 2 * tile_columns).ravel()).ravel()
    out_table[:images * image_tiles] = (each_image * image_stride + (2 * tile_rows * ow + 2 * tile_columns).ravel()).ravel()
    transformed = winograd_phases.weights(weight)
    transform_in, transform_out = winograd_phases.functions(dtype)
    words = im2col.conv2d_meta(h, w, sh, sw, hq, wq, sh, sw, 1, 1, ph, pw)
    phase_meta = builder.block(len(words))
    builder.template[phase_meta:phase_meta + len(words)] = words
    zero_bias, no_bounds = builder.address_of(np.zeros(1, x.dtype)), builder.address_of(np.zeros(3, x.dtype))
    index = builder.register()
    first, count, close = builder.batch_steps(x.dims[0], images)

    def image_phases(k: int) -> None:
        x_image, target = builder.register(), builder.register()
        compute.append(("ADDR", x_image, x.pointer, index, c * h * w * itemsize))
        compute.append(("ADDR", target, phases.pointer, const(k * phase_channels * plane), itemsize))
        ptrs = builder.block(2)
        builder.copy_into(ptrs, [x_image, target], compute)
        compute.append(("SPLIT", const(columns_function(dtype, sw, wq)), const(c), ptrs, phase_meta,
                        const(phase_channels * plane)))
    builder.each_image_of_step(images, count, first, index, image_phases)
    tiles, vectors = builder.register(), builder.register()
    compute.append(("MUL", tiles, count, const(image_tiles)))
    compute.append(("ADD", vectors, tiles, const(lanes - 1)))
    compute.append(("DIV", vectors, vectors, const(lanes)))
    in_ptrs, in_meta = builder.block(3), builder.block(4)
    builder.copy_into(in_ptrs, [phases.pointer, inputs.pointer, builder.address_of(in_table)], compute)
    builder.template[in_meta:in_meta + 4] = [phase_channels, plane, wq, row]
    compute.append(("SPLIT", const(transform_in), const(phase_channels), in_ptrs, in_meta,
                    const(9 * phase_channels * row)))
    compute.append(position_products(
        builder, dtype, 9, vectors, [builder.address_of(transformed), inputs.pointer, products.pointer, zero_bias,
                                     no_bounds], [o * phase_channels, phase_channels * row, o * row],
        [const(o), const(phase_channels), tiles, const(0), const(0), const(row), const(row)],
        const(max(1, 9 * o * phase_channels * row // _WORK_SCALE))))
    out_first = builder.register()
    compute.append(("ADDR", out_first, out.pointer, first, image_stride * itemsize))
    out_ptrs, out_meta = builder.block(5), builder.block(6)
    builder.copy_into(out_ptrs, [products.pointer, out_first, bias_pointer, bounds_pointer,
                                 builder.address_of(out_table)], compute)
    builder.copy_into(out_meta, [const(o), const(row), tiles, const(oh * ow), const(ow), const(mode)], compute)
    compute.append(("SPLIT", const(transform_out), const(o), out_ptrs, out_meta, const(9 * o * row)))
    close()
