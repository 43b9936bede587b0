"""4x4 stride-2 convolutions' and transposed convolutions' products by Winograd's F(2x2, 2x2)
(native/winograd_phases.py), in a segment program: per step of several images, each image's planes
(a convolution's stride phases - the tap products' copy, tap_products.tap_plan - or a transposed
one's padded input), the input transform of them all (a transposed convolution's once per phase of
its output), the GEMMs of the transformed weights by it (9 a phase, as one split: native/
positions.py; the images' tiles side by side in their columns) and the output transform, which adds
the bias, applies the epilogue and stores each image's output (a transposed convolution's phases
each to every other row and column).

9 multiplies where the direct sums take 16 (DCGAN's discriminator: every layer but the first and
the last; its generator: the same). A step holds the fewest images whose tiles fill a panel of the
GEMM's columns: the GEMM streams its weights (9 a phase x O x C, 19 MB for 256 -> 512 channels) once
per panel, a part-filled one included, and more images only make V (and M) larger and further from
the core. Measured over DCGAN's layers (16 images, one thread) against steps of up to 1, 2, 4 and 8
MB of V: the 512 -> 256 transposed layer (4 tiles an image) 6.1, 5.3, 4.2, 4.2 ms - 12 images a
step, 4.2 ms - and the 256 -> 128 one (16 tiles) 4.1, 3.9, 4.4, 5.1 - 3 images, 3.9 ms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriptc.native import gemm, im2col, winograd_phases
from scriptc.native.heads import GEMM_SPLIT_MIN

from .groups import PARALLEL_MIN_ELEMENTS
from .program_values import Builder, TensorValue
from .tap_products import columns_function
from .winograd_products import position_products

# A transposed convolution goes this way with channels (in, out) at least these: with fewer the
# transforms cost about what the multiplies save. Measured over 16 images at one thread (4 at 32x32),
# this way's time over the direct one's, in -> out channels: on 8x8 64 -> 64 0.81, 128 -> 128 0.75,
# 256 -> 64 0.88; on 16x16 32 -> 32 1.09, 64 -> 32 1.01, 64 -> 64 0.88, 128 -> 64 0.88; on 32x32
# 128 -> 64 0.94.
TRANSPOSED_MIN_CHANNELS = (64, 64)
MAX_IMAGES = 16
# multiply-adds over the elements a SPLIT's work counts (as the tap products')
_WORK_SCALE = max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)


@dataclass(frozen=True)
class _Planes:
    """What the transforms read and write for one image: the planes (`channels` of `rows` x `wide`
    elements) that copy_meta's copy (im2col's loop over the input's channels, at copy_stride) makes
    of the image; per pass (a phase of a transposed convolution's output, or the one pass of a
    convolution) the element of the planes where its tiles' windows start and the element of the
    output where its tiles' outputs do; the tiles (rows x columns) each pass computes, and where tile
    (t, s)'s window and outputs start from those (per unit of t and of s), the output's rows and
    columns a tile's 2x2 outputs are apart, and the elements of an output plane."""
    channels: int
    rows: int
    wide: int
    copy_meta: list
    copy_stride: int
    pass_inputs: tuple
    pass_outputs: tuple
    tiles: tuple
    input_steps: tuple
    output_steps: tuple
    output_row: int
    output_column: int
    output_plane: int


def takes(x_shape: tuple, weight_shape: tuple, geometry, groups: int, dtype) -> bool:
    """Whether a convolution of a batch of x_shape multiplies so (winograd_phases.takes)."""
    o, per_group, kh, kw = weight_shape
    return groups == 1 and winograd_phases.takes((kh, kw), geometry, tuple(x_shape[2:]), (per_group, o),
                                                 np.dtype(dtype).name)


def transposed_takes(x_shape: tuple, weight_shape: tuple, geometry, groups: int, dtype) -> bool:
    """Whether a transposed convolution of a batch of x_shape multiplies so: 4x4, stride 2, padding 1,
    no output padding (its output twice its input's size) nor dilation, an image of even height and
    width, a float dtype, and channels (in, out) at least TRANSPOSED_MIN_CHANNELS."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    c, o = weight_shape[0], weight_shape[1] * groups
    return groups == 1 and tuple(weight_shape[2:]) == (4, 4) and (sh, sw, ph, pw, dh, dw) == (2, 2, 1, 1, 1, 1) and \
        (oh, ow) == (2 * x_shape[2], 2 * x_shape[3]) and x_shape[2] % 2 == x_shape[3] % 2 == 0 and \
        np.dtype(dtype).name in winograd_phases.ELEMENTS and c >= TRANSPOSED_MIN_CHANNELS[0] and \
        o >= TRANSPOSED_MIN_CHANNELS[1]


def step_images(tiles: int, dtype: str) -> int:
    """Images a step: the fewest whose `tiles` each fill a panel of the GEMM (at most MAX_IMAGES)."""
    return min(MAX_IMAGES, -(-gemm.VECTORS * gemm.vector_columns(dtype) // tiles))


def phase_products(builder: Builder, x: TensorValue, image: tuple, weight: np.ndarray, out: TensorValue,
                   image_stride: int, bias_pointer: int, bounds_pointer: int, mode: int, geometry) -> None:
    """out = the convolution of x (a batch of `image`: channels, height, width) by `weight` (O, C, 4,
    4), plus the bias at bias_pointer (O values), through the epilogue (bounds_pointer, mode);
    `image_stride`: elements from one image of `out` to the next (each image's planes contiguous)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    c, h, w = image
    hq, wq = oh + 1, ow + 1
    planes = _Planes(4 * c, hq, wq, im2col.conv2d_meta(h, w, sh, sw, hq, wq, sh, sw, 1, 1, ph, pw), sw, (0,), (0,),
                     (oh // 2, ow // 2), (2 * wq, 2), (2 * ow, 2), ow, 1, oh * ow)
    _products(builder, x, image, winograd_phases.weights(weight), out, image_stride, (bias_pointer, bounds_pointer,
                                                                                       mode), planes)


def transposed_products(builder: Builder, x: TensorValue, image: tuple, weight: np.ndarray, out: TensorValue,
                        bias_pointer: int, bounds_pointer: int, mode: int) -> None:
    """out = the transposed convolution of x (a batch of `image`) by `weight` (C, O, 4, 4), stride 2,
    padding 1, plus the bias at bias_pointer (O values), through the epilogue (bounds_pointer, mode)."""
    c, h, w = image
    rows, wide, ow = h + 2, w + 2, 2 * w
    planes = _Planes(c, rows, wide, im2col.conv2d_meta(h, w, 1, 1, rows, wide, 1, 1, 1, 1, 1, 1), 1,
                     tuple(a * wide + b for a in range(2) for b in range(2)),
                     tuple(a * ow + b for a in range(2) for b in range(2)),
                     (h // 2, w // 2), (2 * wide, 2), (4 * ow, 4), 2 * ow, 2, 2 * h * ow)
    o = weight.shape[1]
    _products(builder, x, image, winograd_phases.transposed_weights(weight).reshape(36, o, c), out,
              o * 2 * h * ow, (bias_pointer, bounds_pointer, mode), planes)


def _products(builder: Builder, x: TensorValue, image: tuple, transformed: np.ndarray, out: TensorValue,
              image_stride: int, epilogue: tuple, planes: _Planes) -> None:
    """The steps of the module docstring: `transformed` the weights' U (9 per pass, O, channels)."""
    c, h, w = image
    o = transformed.shape[1]
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    compute, const = builder.compute, builder.const
    passes, channels = len(planes.pass_inputs), planes.channels
    plane = planes.rows * planes.wide
    image_tiles = planes.tiles[0] * planes.tiles[1]
    images = step_images(image_tiles, dtype)
    lanes = winograd_phases.vector_tiles(dtype)
    row = -(-images * image_tiles // lanes) * lanes
    copies = builder.alloc(x.dtype, [const(images * channels * plane)])
    inputs = builder.alloc(x.dtype, [const(passes * 9 * channels * row)])
    products = builder.alloc(x.dtype, [const(passes * 9 * o * row)])
    tile_rows, tile_columns = np.meshgrid(np.arange(planes.tiles[0]), np.arange(planes.tiles[1]), indexing="ij")
    each_image = np.arange(images)[:, None]
    in_table, out_table = (np.zeros(row, np.int64) for _ in range(2))
    in_table[:images * image_tiles] = (each_image * channels * plane + (
        planes.input_steps[0] * tile_rows + planes.input_steps[1] * tile_columns).ravel()).ravel()
    out_table[:images * image_tiles] = (each_image * image_stride + (
        planes.output_steps[0] * tile_rows + planes.output_steps[1] * tile_columns).ravel()).ravel()
    transform_in, transform_out = winograd_phases.functions(dtype)
    copy_meta = builder.block(len(planes.copy_meta))
    builder.template[copy_meta:copy_meta + len(planes.copy_meta)] = planes.copy_meta
    zero_bias, no_bounds = builder.address_of(np.zeros(1, x.dtype)), builder.address_of(np.zeros(3, x.dtype))
    index = builder.register()
    first, count, close = builder.batch_steps(x.dims[0], images)

    def image_planes(k: int) -> None:
        x_image, target = builder.register(), builder.register()
        compute.append(("ADDR", x_image, x.pointer, index, c * h * w * itemsize))
        compute.append(("ADDR", target, copies.pointer, const(k * channels * plane), itemsize))
        ptrs = builder.block(2)
        builder.copy_into(ptrs, [x_image, target], compute)
        compute.append(("SPLIT", const(columns_function(dtype, planes.copy_stride, planes.wide)), const(c), ptrs,
                        copy_meta, const(channels * plane)))
    builder.each_image_of_step(images, count, first, index, image_planes)
    tiles, vectors = builder.register(), builder.register()
    compute.append(("MUL", tiles, count, const(image_tiles)))
    compute.append(("ADD", vectors, tiles, const(lanes - 1)))
    compute.append(("DIV", vectors, vectors, const(lanes)))
    in_meta = builder.block(4)
    builder.template[in_meta:in_meta + 4] = [channels, plane, planes.wide, row]
    table = builder.address_of(in_table)
    for k, offset in enumerate(planes.pass_inputs):
        source, target, in_ptrs = builder.register(), builder.register(), builder.block(3)
        compute.append(("ADDR", source, copies.pointer, const(offset), itemsize))
        compute.append(("ADDR", target, inputs.pointer, const(k * 9 * channels * row), itemsize))
        builder.copy_into(in_ptrs, [source, target, table], compute)
        compute.append(("SPLIT", const(transform_in), const(channels), in_ptrs, in_meta, const(9 * channels * row)))
    compute.append(position_products(
        builder, dtype, 9 * passes, vectors, [builder.address_of(transformed), inputs.pointer, products.pointer,
                                              zero_bias, no_bounds], [o * channels, channels * row, o * row],
        [const(o), const(channels), tiles, const(0), const(0), const(row), const(row)],
        const(max(1, 9 * passes * o * channels * row // _WORK_SCALE))))
    bias_pointer, bounds_pointer, mode = epilogue
    out_first, out_meta, out_table_pointer = builder.register(), builder.block(7), builder.address_of(out_table)
    compute.append(("ADDR", out_first, out.pointer, first, image_stride * itemsize))
    builder.copy_into(out_meta, [const(o), const(row), tiles, const(planes.output_plane), const(planes.output_row),
                                 const(planes.output_column), const(mode)], compute)
    for k, offset in enumerate(planes.pass_outputs):
        source, target, out_ptrs = builder.register(), builder.register(), builder.block(5)
        compute.append(("ADDR", source, products.pointer, const(k * 9 * o * row), itemsize))
        compute.append(("ADDR", target, out_first, const(offset), itemsize))
        builder.copy_into(out_ptrs, [source, target, bias_pointer, bounds_pointer, out_table_pointer], compute)
        compute.append(("SPLIT", const(transform_out), const(o), out_ptrs, out_meta, const(9 * o * row)))
    close()
