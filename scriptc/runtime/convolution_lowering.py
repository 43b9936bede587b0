"""The native lowering of conv2d (a fusion head, or a node of its own) in a segment program.

A batch of any size, the image size and channels the recorded call had (checked): for a depthwise
convolution the depthwise loop, a plane at a time, or on small and strided planes a block of
channels at a time (blocked_depthwise.py). Otherwise a GEMM of the weights by the image's columns, which adds the
bias and applies the bounds (a fused ReLU's floor, a ReLU6's floor and ceiling, a LeakyReLU's slope)
as it stores, the
columns made one of these ways - or, for a 4x4 convolution of stride 2 and enough channels, the
9 GEMMs of Winograd's F(2x2, 2x2) over its phases (winograd_phase_products.py):

- tap products (most convolutions with a window): no im2col, one GEMM over shifted views of the
  padded image's phases (tap_products.py);
- side by side: images whose output planes are small, under large weights, several at a time
  through one GEMM (the weights streamed once per group instead of once per image);
- planes of a few positions (2x2, 3x3) multiply through the narrow product instead of the GEMM
  (gemm.narrow_function: its vectors hold rows of the weights, not 16 columns of which 4 are there),
  side by side or image by image;
- bands: per image and band of output rows, the band's im2col columns (or the image itself for a 1x1
  convolution of stride 1) times each group's weights. The bands are as many output rows as make
  about BAND_BYTES of columns: the GEMM then reads them from the core's cache, where a whole image's
  columns (9 MB for 64 channels of 64x64, 3x3) went out to memory and came back - and its rows, a
  page or more apart, were too many streams for the hardware prefetcher.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriptc.native import blocked_depthwise, gemm, im2col, windows
from scriptc.native.geometry import conv_geometry
from scriptc.native.heads import GEMM_SPLIT_MIN, epilogue, gemm_runs
from scriptc.native.loops import loop_function

from .groups import PARALLEL_MIN_ELEMENTS
from .padded_planes import PaddedPlanes, PhaseLayout, argument, convolution_of, holding, reads_as_image
from .program_values import NotNative, Builder, constant_of, constant_array, copied, dense, tensor_of, TensorValue
from .winograd_phase_products import phase_products
from .winograd_phase_products import takes as phase_takes
from .tap_products import columns_function, each_image, padded_output, reads_in_place, tap_plan, tap_products, \
    taps_pay, writes_phases

# The columns of a band: enough for the GEMM to run long panels, little enough to stay in a core's L2
# beside the weights and the band's output.
BAND_BYTES = 512 << 10
# Past this many groups (not depthwise) the program would hold a launch per group and band: the steps
# run such a convolution instead.
MAX_GROUPS = 64
# Images whose output planes have fewer positions than this, under weights of at least WEIGHT_BYTES,
# go several at a time through one GEMM: their columns side by side (up to GROUP_BYTES of them, at
# most MAX_IMAGES images, fewer where fewer fill whole panels of the GEMM: _whole_panels), so that the
# weights stream from memory once per group instead of once per image (ResNet-18's last layers at
# 2x3x64x64: 9 MB of weights for 4 output positions an image).
GROUP_BELOW_POSITIONS = 256
WEIGHT_BYTES = 256 << 10
# Planes of fewer outputs than this go side by side under weights of any size: a 7x7 plane's 49
# columns are three vectors and a vector of one, two planes' 98 six and one of two (SqueezeNet's
# 32 -> 128 3x3 on 7x7: 0.85x the time image by image).
SMALL_PLANE = 64
GROUP_BYTES = 1 << 20
MAX_IMAGES = 16
# Images side by side: the columns past the GEMM's last whole vector, at most this many, go by the
# narrow product where the weights are at least TAIL_MIN_ROWS by TAIL_MIN_WEIGHTS in all (splits_tail;
# measured at 128x288 by 96 + 2, 8 and 14 columns: 3, 2.3 and -0.8 us gained).
TAIL_MAX_COLUMNS = 8
TAIL_MIN_ROWS = 64
TAIL_MIN_WEIGHTS = 16384
# Convolutions of planes this small multiply through the narrow product: measured against the GEMM
# at 4 positions 0.4x its time, at 9 0.6-0.75x, at 16 1.1x.
NARROW_MAX_POSITIONS = 12
# Images side by side through the narrow product only while its tile keeps this many vectors of rows:
# two 3x3 planes (18 columns) left it one, and on Zen 4 SqueezeNet's 3x3 layers and classifier ran
# 0.83-0.92x the time image by image (9 columns, two vectors of rows, and no gather and scatter).
NARROW_MIN_BLOCKS = 2


def bands(rows: int, row_bytes: int) -> list[tuple[int, int]]:
    """[first, end) ranges of `rows` output rows, each of about BAND_BYTES of columns (`row_bytes`
    a row), all of them in one where they fit; as even as the split allows."""
    count = max(1, min(rows, -(-rows * row_bytes // BAND_BYTES)))
    size = -(-rows // count)
    return [(first, min(rows, first + size)) for first in range(0, rows, size)]


def image_output(builder: Builder, x: TensorValue, image: tuple, planes: tuple, bounds, into=None):
    """A convolution's output (x's batch, *planes) once x's image dims are checked to be `image`
    (the program's geometry is built for them), and its epilogue's (bounds pointer, mode) for
    `bounds` (floor, ceiling, slope, or None). `into`: a cat's Destination (program_memory.py) whose
    view of the cat's result the output is where it takes these planes - each image's planes
    contiguous, images image_elements(out) apart."""
    for d, size in zip(x.dims[1:], image):
        builder.equal(d, builder.const(size))
    out = into.view(builder, x.dims[0], x.dtype, planes) if into is not None else None
    if out is None:
        out = builder.alloc(x.dtype, [x.dims[0], *(builder.const(size) for size in planes)])
    floor, ceiling, slope = bounds or (None, None, None)
    bounds_array, mode = epilogue(floor, ceiling, x.dtype, slope)
    return out, builder.address_of(bounds_array), mode


@dataclass(frozen=True)
class ImageSlot:
    """Image `index` (a register) of `batch_output`, a contiguous batch: where a depth-first chain's
    last convolution (depth_first.py), run one image at a time, writes that image's output."""
    batch_output: TensorValue
    index: int

    def view(self, builder: Builder, batch: int, dtype, planes: tuple) -> TensorValue | None:
        """The image's planes of the batch output, for a producer of `batch` (a register: one) images
        of `planes`; None where they are not the batch output's."""
        out = self.batch_output
        if dtype != out.dtype or [builder.known(d) for d in out.dims[1:]] != list(planes):
            return None
        pointer = builder.register()
        builder.compute.append(("ADDR", pointer, out.pointer, self.index, int(np.prod(planes)) * dtype.itemsize))
        return TensorValue(dtype, [batch, *map(builder.const, planes)], pointer, out.buffer)


def image_elements(builder: Builder, out: TensorValue) -> int:
    """Elements from one image of image_output's output to the next: its planes', or the image
    stride of the cat's result it is a view of."""
    if out.strides is not None:
        return builder.known(out.strides[0])
    return int(np.prod([builder.known(d) for d in out.dims[1:]]))


def convolution(builder: Builder, args: list, x_value: np.ndarray, bounds: tuple | None, into=None) -> TensorValue:
    """conv2d(args) of a batch like `x_value` in its channels and image size, maximum(result, floor)
    where bounds (floor, ceiling, slope) give a floor, then minimum(that, ceiling) where the ceiling is not
    None; where(result > 0, result, result * slope) where they give a slope (see the module docstring);
    written into `into`'s place in a cat's result where the products take it (image_output), or into
    the padded planes its reader multiplies (`into` a PaddedPlanes, where the tap products run it)."""
    weight = constant_array(args[1])
    bias = None if args[2] is None else constant_array(args[2])
    stride, padding, dilation, groups = (constant_of(a) for a in args[3:7])
    if x_value.ndim != 4 or weight.dtype != x_value.dtype or x_value.dtype.name not in im2col.FUNCTIONS or \
            not gemm_runs():
        raise NotNative("a convolution not of 4-D floats of one dtype, or no compiled GEMM")
    geometry = conv_geometry(x_value.shape, weight.shape, stride, padding, dilation, groups)
    if geometry is None:
        raise NotNative("convolution arguments the op refuses")
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    _, c, h, w = x_value.shape
    o, per_group, kh, kw = weight.shape
    depthwise, grouped, images, narrow, plan, phased = _products(x_value.shape, x_value.dtype, weight, geometry,
                                                                 groups, builder.slices)
    held = holding(builder, args[0])
    source = held if held is not None and plan is not None and \
        reads_in_place(held.layout, (c, h, w), weight.shape, geometry, plan) else None
    if source is not None:
        x = tensor_of(args[0])
    elif held is not None and isinstance(held.layout, PhaseLayout):
        raise NotNative("phases a stride-2 convolution cannot multiply in place")
    elif held is not None:  # (planes it cannot read in place: a contiguous copy of their values)
        x = copied(builder, tensor_of(args[0]))
    else:
        x = dense(builder, args[0])
    if isinstance(into, PaddedPlanes) and into.phases is not None:  # (from its own input's phases: not planes)
        into.layout = into.phases if source is None and \
            writes_phases(into.phases, x.dtype.name, weight.shape, geometry, plan) else None
        into = into if into.layout is not None else None
    elif isinstance(into, PaddedPlanes):
        into.layout = padded_output(o, (h, w), geometry, plan) if (ph, pw) == into.reader_padding else None
        into = into if into.layout is not None else None
    # (a depthwise loop writes every image's planes as one range: into a cat's channels it cannot)
    into = None if depthwise and not isinstance(into, ImageSlot) else into
    out, bounds_pointer, mode = image_output(builder, x, (c, h, w), (o, oh, ow), bounds, into)
    zero_bias = builder.address_of(np.zeros(max(o, 1), x.dtype))
    bias_pointer = builder.address_of(np.ascontiguousarray(bias)) if bias is not None else zero_bias
    if depthwise:
        if blocked_depthwise.takes((h, w), (kh, kw), geometry):
            _blocked_depthwise(builder, x, (h, w), weight, bias, out, bounds_pointer, mode, geometry)
        else:
            _depthwise(builder, x, (h, w), weight, out, bias_pointer, bounds_pointer, mode, geometry)
        return out
    if phased:
        phase_products(builder, x, (c, h, w), weight, out, image_elements(builder, out), bias_pointer, bounds_pointer,
                       mode, geometry)
        return out
    if groups > MAX_GROUPS:
        raise NotNative("a grouped convolution of many groups")
    if grouped:
        _grouped_products(builder, x, (c, h, w), weight, out, bias_pointer, bounds_pointer, mode, geometry, groups,
                          bias is not None, images, narrow)
        return out
    if plan is not None:
        tap_products(builder, x, (c, h, w), weight, out, image_elements(builder, out), bias_pointer, bounds_pointer,
                     mode, geometry, bias is not None, plan, source, into)
        return out
    _banded_products(builder, x, (c, h, w), weight, out, bias_pointer, bounds_pointer, mode, geometry, groups,
                     bias is not None, narrow)
    return out


def _products(x_shape: tuple, dtype, weight: np.ndarray, geometry, groups: int, slices: int = 1) -> tuple:
    """How a convolution of a batch of x_shape multiplies: (depthwise, several images side by side,
    how many, by the narrow product, the tap plan where the tap products run it or None, by
    Winograd's products over its phases) - see the module docstring; `slices`: how many threads may
    split its products (Builder.slices)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    _, c, h, w = x_shape
    o, per_group, kh, kw = weight.shape
    depthwise = groups == c == o and per_group == 1  # (its loops run every image's planes as one range)
    if not depthwise and phase_takes(x_shape, weight.shape, geometry, groups, dtype):
        return False, False, 1, False, None, True
    column_bytes = c // groups * groups * kh * kw * oh * ow * np.dtype(dtype).itemsize
    images = min(MAX_IMAGES, GROUP_BYTES // max(1, column_bytes))
    # planes of a few positions: the narrow product (gemm.narrow_function), several images at a time
    # where they fit in the columns of one of its tiles that still holds NARROW_MIN_BLOCKS vectors of rows
    narrow = groups == 1 and oh * ow <= NARROW_MAX_POSITIONS
    side_by_side = gemm.NARROW_TILE // NARROW_MIN_BLOCKS
    if narrow and oh * ow * 2 <= side_by_side:
        images = min(images, side_by_side // (oh * ow))
    elif narrow:
        images = 1
    elif np.dtype(dtype).name in gemm.FUNCTIONS:
        images = _whole_panels(images, oh * ow, np.dtype(dtype).name, slices)
    grouped = oh * ow < GROUP_BELOW_POSITIONS and (weight.nbytes >= WEIGHT_BYTES or oh * ow < SMALL_PLANE) and \
        images >= 2
    plan = tap_plan((c, h, w), weight.shape, geometry) if not depthwise and not grouped and groups == 1 and \
        taps_pay((h, w), (kh, kw), geometry) else None
    return depthwise, grouped, images, narrow, plan, False


def _whole_panels(images: int, positions: int, dtype: str, slices: int) -> int:
    """The most images, at most `images`, whose columns side by side fill the GEMM's panels of
    gemm.VECTORS vectors exactly in each of `slices` equal slices of its columns (the threads' parts
    of a SPLIT), or `images` where no count of at least two does: the GEMM streams the whole weights
    once per panel, a part-filled one included (DCGAN D's conv4, 16 positions under 8 MB of weights:
    at one thread 3 images a group, one panel, 0.8x the time of 4 in two panels; at two, 3 images
    would split 1 + 2 vectors, the second thread's part as long as 4 images' 2 + 2)."""
    panel = gemm.VECTORS * gemm.vector_columns(dtype) * slices
    return next((count for count in range(images, 1, -1) if count * positions % panel == 0), images)


def image_by_image(x_shape: tuple, weight: np.ndarray, geometry, groups: int) -> bool:
    """Whether convolution() runs a batch of x_shape one image at a time, each image's output from
    that image alone by the same launches whatever the batch (depthwise loops, tap and banded
    products; not the side-by-side products, nor a convolution the steps run): a depth-first chain's
    layer (depth_first.py) can then run an image at a time and give the same bits."""
    depthwise, grouped, phased = (_products(x_shape, weight.dtype, weight, geometry, groups)[k] for k in (0, 1, 5))
    return depthwise or (not grouped and not phased and groups <= MAX_GROUPS)


def plan_padded_planes(nodes: list, slot_of: dict, frame: list, out_slots: list[int]) -> dict[int, PaddedPlanes]:
    """A PaddedPlanes by producer node id (padded_planes.py) for each convolution (or FusionGroup
    headed by one) among `nodes` (a segment's top-level nodes; `frame`: the recorded call's values by
    slot) whose one output, no output of the segment, nothing reads but one convolution of them, as
    its image, that multiplies it by the tap products: at stride 1 over rows of W + PW (its padded
    planes' rows; the producer is told that reader's padding), at stride 2 over its phases of an
    even image (the producer is told their PhaseLayout)."""
    inside, outside = {id(node) for node in nodes}, set(out_slots)
    plans = {}
    for node in nodes:
        if len(node.outputs) != 1 or convolution_of(node) is None or slot_of.get(id(node.outputs[0])) in outside:
            continue
        users = list(node.outputs[0].uses)
        if len(users) != 1 or id(users[0].user) not in inside or not reads_as_image(users[0].user, users[0].index):
            continue
        reader, image = users[0].user, frame[slot_of[id(node.outputs[0])]]
        weight, stride, padding, dilation, groups = (argument(reader, k) for k in range(1, 7) if k != 2)
        if type(image) is not np.ndarray or image.ndim != 4 or type(weight) is not np.ndarray or \
                weight.ndim != 4 or type(groups) is not int:
            continue
        geometry = conv_geometry(image.shape, weight.shape, stride, padding, dilation, groups)
        plan = _products(image.shape, image.dtype, weight, geometry, groups)[4] if geometry is not None else None
        if plan is None:
            continue
        if tuple(geometry[:2]) == (1, 1) and plan[1] == image.shape[3] + geometry[3]:
            plans[id(node)] = PaddedPlanes(tuple(geometry[2:4]))
        elif tuple(geometry[:2]) == (2, 2) and image.shape[2] % 2 == image.shape[3] % 2 == 0:
            slack = (weight.shape[3] - 1) * geometry[5] // 2 + 1
            layout = PhaseLayout(image.shape[1], image.shape[2:], tuple(geometry[2:4]), tuple(plan[:2]), slack)
            if layout.passes() is not None:
                plans[id(node)] = PaddedPlanes(layout.padding, phases=layout)
    return plans


def _depthwise(builder: Builder, x: TensorValue, image: tuple, weight, out: TensorValue, bias_pointer: int,
               bounds_pointer: int, mode: int, geometry) -> None:
    """One loop over every image's planes (`image`: their height and width)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    (h, w), (c, _, kh, kw) = image, weight.shape
    ptrs, meta = builder.block(7), builder.block(14)
    taps = builder.address_of(np.ascontiguousarray(weight.reshape(c, -1)))
    rows, columns = (builder.address_of(table) for table in windows.positions(oh, ow, x.dtype.name))
    builder.copy_into(ptrs, [x.pointer, taps, bias_pointer, out.pointer, bounds_pointer, rows, columns], builder.compute)
    builder.copy_into(meta, [builder.const(v) for v in (c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                                                       mode)], builder.shape)
    planes = builder.arithmetic("MUL", x.dims[0], builder.const(c))
    work = builder.arithmetic("MUL", planes, builder.const(oh * ow * kh * kw // 2))
    builder.compute.append(("SPLIT", builder.const(loop_function("depthwise", x.dtype.name)), planes, ptrs, meta,
                            work))


def _blocked_depthwise(builder: Builder, x: TensorValue, image: tuple, weight, bias, out: TensorValue,
                       bounds_pointer: int, mode: int, geometry) -> None:
    """One loop over every image's blocks of channels (blocked_depthwise.py)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    (h, w), (c, _, kh, kw) = image, weight.shape
    weights, bias = blocked_depthwise.packed(weight, bias)
    ptrs, meta = builder.block(5), builder.block(14)
    builder.copy_into(ptrs, [x.pointer, builder.address_of(weights), builder.address_of(bias), out.pointer,
                             bounds_pointer], builder.compute)
    builder.copy_into(meta, [builder.const(v) for v in (c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode)],
                      builder.shape)
    blocks = builder.arithmetic("MUL", x.dims[0], builder.const(-(-c // blocked_depthwise.lanes(x.dtype.name))))
    work = builder.arithmetic("MUL", x.dims[0], builder.const(c * oh * ow * kh * kw // 2))
    builder.compute.append(("SPLIT", builder.const(loop_function("blocked_depthwise", x.dtype.name)), blocks, ptrs,
                            meta, work))


def _banded_products(builder: Builder, x: TensorValue, image: tuple, weight, out: TensorValue, bias_pointer: int,
                     bounds_pointer: int, mode: int, geometry, groups: int, has_bias: bool, narrow: bool) -> None:
    """Per image (`image`: its channels, height and width) and band of output rows: the band's
    columns, then each group's GEMM into the band's part of the output."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    o, per_group, kh, kw = weight.shape
    c, h, w = image
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    depth, columns, rows = per_group * kh * kw, oh * ow, o // groups
    pointwise = (kh, kw, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0)
    row_bytes = c * kh * kw * ow * itemsize
    image_bands = bands(oh, row_bytes)
    compute = builder.compute
    cols = None
    if not pointwise:
        band_rows = max(end - first for first, end in image_bands)
        cols = builder.alloc(x.dtype, [builder.const(c * kh * kw * band_rows * ow)])
    # planes of a few positions: the narrow product, which reads the weights packed
    narrow = narrow and len(image_bands) == 1
    weights = np.ascontiguousarray(weight.reshape(groups, rows, depth))
    if narrow:
        weights = gemm.narrow_packed(weights[0])[None]
    gemm_loop = builder.const(gemm.narrow_function(dtype) if narrow else loop_function("gemm", dtype))
    im2col_loop = builder.const(columns_function(dtype, sw, ow))

    def each(image):
        x_image, out_image = builder.register(), builder.register()
        compute.append(("ADDR", x_image, x.pointer, image, c * h * w * itemsize))
        compute.append(("ADDR", out_image, out.pointer, image, image_elements(builder, out) * itemsize))
        for first, end in image_bands:
            width = (end - first) * ow
            if cols is not None:
                im2col_ptrs, words = builder.block(2), im2col.conv2d_meta(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw,
                                                                          (first, end))
                meta_block = builder.block(len(words))
                builder.template[meta_block:meta_block + len(words)] = words
                builder.copy_into(im2col_ptrs, [x_image, cols.pointer], compute)
                compute.append(("SPLIT", im2col_loop, builder.const(c), im2col_ptrs, meta_block,
                                builder.const(c * kh * kw * width)))
                source, source_step = cols.pointer, width
            else:  # the image's own rows of the band, H*W apart
                source, source_step = builder.register(), columns
                compute.append(("ADDR", source, x_image, builder.const(first * ow), itemsize))
            vectors = builder.const(-(-(rows if narrow else width) // gemm.vector_columns(dtype)))
            work = builder.const(max(1, rows * depth * width // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
            for g in range(groups):
                ptrs, meta = builder.block(5), builder.block(7)
                group_source, group_out, group_bias = builder.register(), builder.register(), builder.register()
                compute.append(("ADDR", group_source, source, builder.const(g * depth * source_step), itemsize))
                compute.append(("ADDR", group_out, out_image, builder.const(g * rows * columns + first * ow), itemsize))
                compute.append(("ADDR", group_bias, bias_pointer, builder.const(g), rows * itemsize))
                builder.copy_into(ptrs, [builder.address_of(weights[g]), group_source, group_out, group_bias,
                                         bounds_pointer], compute)
                builder.template[meta:meta + 7] = [rows, depth, width, mode, 1 if has_bias else 0,
                                                   source_step, columns]
                compute.append(("SPLIT", gemm_loop, vectors, ptrs, meta, work))
    each_image(builder, x, each)


def row_stride(columns: int, itemsize: int) -> int:
    """The row stride, in elements, of a matrix of `columns` columns that the GEMM reads in place: whole
    cache lines, an odd number of them. Rows an even number of lines apart start in a fraction of L1's
    sets, and a panel's rows evicted each other before the next block of rows came back to them
    (DCGAN D's conv3, two images of 64 positions side by side, 256 x 2048 by 2048 x 128: 0.93x the time
    at rows of 144 columns, 9 lines, as at 128, 8)."""
    lines = -(-columns * itemsize // 64)
    return (lines + 1 - lines % 2) * 64 // itemsize


def stores_in_place(rows: int, depth: int, positions: int, wide: int, dtype: str) -> bool:
    """Whether images side by side, `positions` columns each in rows `wide` apart, multiply by
    (rows, depth) weights straight into their outputs: each vector of columns one image's (positions
    a multiple of the lanes), through the row-table loop, which stores each vector where a table says
    (gemm.rows_function) - where the plain loop would read the columns in place too (neither packs
    them: the two multiply alike, and the scratch matrix and the copy of it to the outputs are saved;
    DCGAN D's conv3 and conv4)."""
    itemsize = np.dtype(dtype).itemsize
    weights = rows * depth * itemsize
    packed = weights <= gemm.PACKED_A_BYTES or rows <= gemm.FEW_BLOCKS * gemm.ROWS and \
        weights <= gemm.FEW_BLOCKS_A_BYTES or wide * itemsize >= gemm.FAR_ROW_BYTES
    return positions % gemm.vector_columns(dtype) == 0 and not packed


def splits_tail(rows: int, depth: int, weight_bytes: int) -> bool:
    """Whether images side by side whose columns leave a few past the last whole vector of the GEMM
    (at most TAIL_MAX_COLUMNS) multiply those by the narrow product (gemm.narrow_function), which
    holds rows in its vectors: the GEMM runs them as one masked vector, as long as a whole one.
    SqueezeNet's 7x7 expand3x3 (128 x 288 weights, two images' 98 columns): 34 us -> 31 us; on
    products of under TAIL_MIN_WEIGHTS weights or fewer rows than TAIL_MIN_ROWS it gained nothing.
    Weights past WEIGHT_BYTES are left alone: the narrow product reads them packed, a second copy."""
    return rows >= TAIL_MIN_ROWS and rows * depth >= TAIL_MIN_WEIGHTS and weight_bytes < WEIGHT_BYTES


def _tail_columns(builder: Builder, width: int, lanes: int) -> int:
    """A register holding how many of `width` columns (a register the step's loop sets) splits_tail's
    narrow product takes: those past the last whole vector where they are at most TAIL_MAX_COLUMNS,
    else none (with more, the narrow product took longer than the GEMM's masked vector)."""
    whole, left, takes = builder.register(), builder.register(), builder.register()
    builder.compute.extend([
        ("DIV", whole, width, builder.const(lanes)), ("MUL", whole, whole, builder.const(lanes)),
        ("SUB", left, width, whole),
        # 1 where left <= TAIL_MAX_COLUMNS, else 0 (left < lanes)
        ("SUB", takes, builder.const(TAIL_MAX_COLUMNS + lanes), left), ("DIV", takes, takes, builder.const(lanes)),
        ("MUL", left, left, takes)])
    return left


def _grouped_products(builder: Builder, x: TensorValue, image: tuple, weight, out: TensorValue, bias_pointer: int,
                      bounds_pointer: int, mode: int, geometry, groups: int, has_bias: bool, images: int,
                      narrow: bool) -> None:
    """Per group of up to `images` images: their columns side by side (im2col's, or the images
    themselves copied so for a 1x1 convolution of stride 1), then each group's GEMM - into a scratch
    matrix of as many images' outputs, each image's rows of it then copied to its place, or where
    every vector of columns is one image's (stores_in_place), straight into the images' outputs."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    o, per_group, kh, kw = weight.shape
    c, h, w = image
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    depth, positions, rows = per_group * kh * kw, oh * ow, o // groups
    wide = row_stride(images * positions, itemsize)  # the row stride of the columns and of the scratch output
    pointwise = (kh, kw, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0)
    in_place = not narrow and stores_in_place(rows, depth, positions, wide, dtype)
    cols = builder.alloc(x.dtype, [builder.const(c * kh * kw * wide)])
    products = None if in_place else builder.alloc(x.dtype, [builder.const(o * wide)])
    weights = np.ascontiguousarray(weight.reshape(groups, rows, depth))
    if narrow:
        weights = gemm.narrow_packed(weights[0])[None]
    compute, const = builder.compute, builder.const
    out_image = image_elements(builder, out)
    index = builder.register()
    first, count, close = builder.batch_steps(x.dims[0], images)
    if not pointwise:
        words = im2col.conv2d_meta(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, None, wide)
        meta_block = builder.block(len(words))
        builder.template[meta_block:meta_block + len(words)] = words
    def gather(k: int) -> None:
        x_image, target = builder.register(), builder.register()
        compute.append(("ADDR", x_image, x.pointer, index, c * h * w * itemsize))
        compute.append(("ADDR", target, cols.pointer, const(k * positions), itemsize))
        if pointwise:  # the image's C rows of H*W, into its columns' place
            compute.append(("COPY2D", target, const(wide * itemsize), x_image, const(positions * itemsize), const(c),
                            const(positions * itemsize)))
        else:
            im2col_ptrs = builder.block(2)
            builder.copy_into(im2col_ptrs, [x_image, target], compute)
            compute.append(("SPLIT", const(columns_function(dtype, sw, ow)), const(c), im2col_ptrs, meta_block,
                            const(c * kh * kw * positions)))
    builder.each_image_of_step(images, count, first, index, gather)
    width, vectors = builder.register(), builder.register()
    rows_register = const(rows)
    lanes = gemm.vector_columns(dtype)
    compute.append(("MUL", width, count, const(positions)))
    tail = None
    if not narrow and not in_place and splits_tail(rows, depth, weight.nbytes):
        tail = _tail_columns(builder, width, lanes)
        compute.append(("SUB", width, width, tail))
        tail_weights = [gemm.narrow_packed(weights[g]) for g in range(groups)]
    compute.append(("ADD", vectors, rows_register if narrow else width, const(lanes - 1)))
    compute.append(("DIV", vectors, vectors, const(lanes)))
    work = const(max(1, rows * depth * images * positions // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    if in_place:  # (row k of the columns at k * wide; vector q of them image q * lanes // positions's)
        first_out = builder.register()
        compute.append(("ADDR", first_out, out.pointer, first, out_image * itemsize))
        column = np.arange(0, images * positions, lanes)
        table, kept_lanes, kept_at = (builder.address_of(a) for a in (
            np.arange(depth, dtype=np.int64) * wide, np.full(len(column), -1, np.int32),
            (column // positions * out_image + column % positions).astype(np.int64)))
    for g in range(groups):
        ptrs, meta = builder.block(8 if in_place else 5), builder.block(8 if in_place else 7)
        group_source, group_out, group_bias = builder.register(), builder.register(), builder.register()
        compute.append(("ADDR", group_source, cols.pointer, const(g * depth * wide), itemsize))
        if in_place:
            compute.append(("ADDR", group_out, first_out, const(g * rows * positions), itemsize))
        else:
            compute.append(("ADDR", group_out, products.pointer, const(g * rows * wide), itemsize))
        compute.append(("ADDR", group_bias, bias_pointer, const(g), rows * itemsize))
        pointers = [builder.address_of(weights[g]), group_source, group_out, group_bias, bounds_pointer]
        words = [const(rows), const(depth), width, const(mode), const(1 if has_bias else 0), const(wide)]
        if in_place:
            builder.copy_into(ptrs, pointers + [table, kept_lanes, kept_at], compute)
            builder.copy_into(meta, words + [const(positions), const(0)], compute)
            product = gemm.rows_function(dtype)
        else:
            builder.copy_into(ptrs, pointers, compute)
            builder.copy_into(meta, words + [const(wide)], compute)
            product = gemm.narrow_function(dtype) if narrow else loop_function("gemm", dtype)
        compute.append(("SPLIT", const(product), vectors, ptrs, meta, work))
        if tail is not None:  # the columns past the GEMM's, by the narrow product
            tail_ptrs, tail_meta = builder.block(5), builder.block(7)
            tail_source, tail_out = (builder.register(), builder.register())
            compute.append(("ADDR", tail_source, group_source, width, itemsize))
            compute.append(("ADDR", tail_out, group_out, width, itemsize))
            builder.copy_into(tail_ptrs, [builder.address_of(tail_weights[g]), tail_source, tail_out, group_bias,
                                          bounds_pointer], compute)
            builder.copy_into(tail_meta, [const(rows), const(depth), tail, const(mode), const(1 if has_bias else 0),
                                          const(wide), const(wide)], compute)
            compute.append(("SPLIT", const(gemm.narrow_function(dtype)), const(-(-rows // lanes)), tail_ptrs,
                            tail_meta, const(max(1, rows * depth * TAIL_MAX_COLUMNS // PARALLEL_MIN_ELEMENTS))))
    def scatter(k: int) -> None:
        source, target = builder.register(), builder.register()
        compute.append(("ADDR", target, out.pointer, index, out_image * itemsize))
        compute.append(("ADDR", source, products.pointer, const(k * positions), itemsize))
        compute.append(("COPY2D", target, const(positions * itemsize), source, const(wide * itemsize), const(o),
                        const(positions * itemsize)))
    if not in_place:
        builder.each_image_of_step(images, count, first, index, scatter)
    close()
