"""Depthwise 2-D convolution of small planes with a block of channels in each vector, as a native loop.

depthwise.py takes a plane at a time, a vector of its outputs at a time: on planes of a few
positions most lanes are empty (4 of 16 on a 2x2 plane) and a strided plane reads its taps by
gathers (~14 cycles each) - MobileNetV2's 4x4 and 2x2 layers ran at 2-5 GFLOP/s. Here a block of
LANES channels of one image goes through together (onnxruntime's NCHWc layout, made and unmade per
block in L1): their planes, consecutive in NCHW, are read LANES channels by LANES positions at a
time and transposed in registers, so that each input position becomes one vector of the block's
channels, laid out in a scratch plane with a zero border as wide as the padding (read straight into
it where the windows reach no padding); every tap of every output is then one multiply-add of whole
vectors, with no bounds to check, and the block's outputs are transposed back as they are stored.

`scriptc_depthwise_blocked_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): blocks
[start, end) of (image, LANES channels), N * ceil(C / LANES) of them; ptrs = [input (N, C, H, W),
weights (ceil(C / LANES), KH*KW, LANES) (packed()), bias (ceil(C / LANES) * LANES), output (N, C, OH,
OW), bounds (3)]; meta = [C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, epilogue]: output = bias +
the taps' products (zero padding), then for epilogue 1 maximum(output, bounds[0]) (a fused ReLU) and
for 2 minimum(maximum(output, bounds[0]), bounds[1]) (a ReLU6, a clamp), for 3 where(output > 0,
output, output * bounds[2]) (a LeakyReLU), by compares and selects
that keep a NaN, as numpy's maximum and minimum do.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop
from scriptc.codegen.llvm.mathlib import CONTRACT

from .loops import loop_arguments, loop_module
from .loops import splat as vector_splat

I32, I64 = ir.IntType(32), ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_depthwise_blocked_f32", ir.FloatType()),
             "float64": ("scriptc_depthwise_blocked_f64", ir.DoubleType())}
VECTOR_BYTES = 64
# The most positions of a plane - its input, the input with its border, its output - the loop's
# scratch (on the stack: two planes of vectors, 64 KB) holds. Past 16x16 planes transposing them in
# and out costs more than the lanes it fills win: MobileNetV2's 32x32 layers took 72 and 90 us here
# against 44 and 49 in depthwise.py's loop (SqueezeNet's 31x31 pool 50 against 37 in pool.py's).
MAX_POSITIONS = 512
# Planes of at most this many outputs come here at stride 1 (takes()).
FEW_OUTPUTS = 64
# Outputs of a row a 3x3 window computes side by side.
GROUP = 4


def lanes(dtype: str) -> int:
    """Channels per block (a vector's lanes) for a dtype name."""
    return VECTOR_BYTES // np.dtype(dtype).itemsize


def fits(h: int, w: int, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, dh: int,
         dw: int) -> bool:
    """Whether the loop's scratch holds the planes of a window geometry: the input, the input with
    its border (the padding, and past it what the last windows reach), the output."""
    tall = max(h + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wide = max(w + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    return max(h * w, tall * wide, oh * ow) <= MAX_POSITIONS


def takes(image: tuple, kernel: tuple, geometry) -> bool:
    """Whether a depthwise convolution of planes `image` (H, W) by a `kernel` (KH, KW) of conv
    `geometry` (SH, SW, PH, PW, DH, DW, OH, OW) runs here rather than in depthwise.py's loop: its
    planes fit, and it is strided or has few outputs a plane (measured at 2 x C x H x W, 3x3: 144 x
    16x16 at stride 1 took 48 us here, 42 there; at stride 2 21 against 29; 8x8 and smaller
    15.5/17, 8.4/11, 12/26 on 2x2)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    return fits(*image, oh, ow, *kernel, sh, sw, ph, pw, dh, dw) and ((sh, sw) != (1, 1) or oh * ow <= FEW_OUTPUTS)


def packed(weight: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(weights, bias) as the loop reads them: per block of LANES channels, each tap's weights one
    vector ((blocks, KH*KW, LANES)), and the bias padded to whole blocks; zeros past the last channel."""
    channels, taps = weight.shape[0], weight.shape[2] * weight.shape[3]
    count = lanes(weight.dtype.name)
    blocks = -(-channels // count)
    weights = np.zeros((blocks * count, taps), weight.dtype)
    weights[:channels] = weight.reshape(channels, taps)
    padded_bias = np.zeros(blocks * count, weight.dtype)
    if bias is not None:
        padded_bias[:channels] = bias
    return np.ascontiguousarray(weights.reshape(blocks, count, taps).transpose(0, 2, 1)), padded_bias


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def transpose(b: ir.IRBuilder, rows: list) -> list:
    """The columns of a square of vectors (as many vectors as lanes): log2(lanes) rounds, each
    pairing the vectors `half` apart and swapping the lanes of one with the other's, `half` lanes
    at a time (two-source shuffles, one instruction each)."""
    count = len(rows)
    rows = list(rows)
    half = count // 2
    while half:
        for i in range(count):
            if i & half:
                continue
            j = i + half
            low = [k if not k & half else count + k - half for k in range(count)]
            high = [k + half if not k & half else count + k for k in range(count)]
            rows[i], rows[j] = (b.shuffle_vector(rows[i], rows[j], ir.Constant(ir.VectorType(I32, count), mask))
                                for mask in (low, high))
        half //= 2
    return rows


def _build(b: ir.IRBuilder, args, element) -> None:
    build(b, args, element, pooling=False)


def build(b: ir.IRBuilder, args, element, pooling: bool) -> None:
    """The loop's body: a depthwise convolution's, or (`pooling`) a max pooling's (blocked_pool.py)."""
    if pooling:
        start, end, (source, target), meta = loop_arguments(b, args, element, 2, 13)
        channels, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw = meta
    else:
        start, end, (source, weights, bias, target, bounds), meta = loop_arguments(b, args, element, 5, 14)
        channels, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, epilogue = meta
    width = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
    vector = ir.VectorType(element, width)
    masks = ir.VectorType(ir.IntType(1), width)
    suffix = f"v{width}{'f64' if element == ir.DoubleType() else 'f32'}"
    masked_load = ir.Function(b.module, ir.FunctionType(vector, [vector.as_pointer(), I32, masks, vector]),
                              f"llvm.masked.load.{suffix}.p0")
    masked_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), I32, masks]),
                               f"llvm.masked.store.{suffix}.p0")
    align = ir.Constant(I32, VECTOR_BYTES // width)
    zeros = ir.Constant(vector, [0.0] * width)
    # what the border holds: a tap there adds nothing to a sum, and loses every maximum
    border_value = ir.Constant(vector, [float("-inf") if pooling else 0.0] * width)
    no_lanes = ir.Constant(masks, [0] * width)
    lane = ir.Constant(ir.VectorType(I64, width), list(range(width)))

    def const(value):
        return ir.Constant(I64, value)

    splat = functools.partial(vector_splat, b)

    def at(pointer, index):
        return b.bitcast(b.gep(pointer, [index]), vector.as_pointer())

    def greater(a, c):
        return b.select(b.icmp_signed(">", a, c), a, c)

    # the dense plane of the block's channels, then the same with its border (later its outputs)
    dense, bordered = (b.alloca(vector, size=const(MAX_POSITIONS)) for _ in range(2))
    dense.align = bordered.align = VECTOR_BYTES
    accumulator = b.alloca(vector)
    positions, outputs = b.mul(h, w), b.mul(oh, ow)
    # the padded plane, and past it what the last windows reach (a pooling's ceil_mode)
    tall = greater(b.add(h, b.mul(ph, const(2))), b.add(b.mul(b.sub(oh, const(1)), sh),
                                                        b.add(b.mul(b.sub(kh, const(1)), dh), const(1))))
    wide = greater(b.add(w, b.mul(pw, const(2))), b.add(b.mul(b.sub(ow, const(1)), sw),
                                                        b.add(b.mul(b.sub(kw, const(1)), dw), const(1))))
    border_positions = b.mul(tall, wide)
    # windows that reach no padding and past the image (SqueezeNet's 3x3/2 pools of 15x15 and 7x7
    # planes): the input is read straight into the plane the taps read, with no border to fill
    borderless = b.and_(b.icmp_signed("==", tall, h), b.icmp_signed("==", wide, w))
    read_plane = b.select(borderless, bordered, dense)
    nan_lanes = b.alloca(masks) if pooling else None
    blocks_per_image = b.sdiv(b.add(channels, const(width - 1)), const(width))
    taps = b.mul(kh, kw)
    if not pooling:
        low, high, slope = (splat(b.load(b.gep(bounds, [const(k)])), vector) for k in (0, 1, 2))

    def finish(total):
        if pooling:
            return total
        # compares and selects (a NaN compares false: it stays), where LLVM's maximum also orders
        # -0 below +0 at ~6 instructions
        floored = b.select(b.fcmp_ordered("<", total, low), low, total)
        floored = b.select(b.icmp_signed(">=", epilogue, const(1)), floored, total)
        clamped = b.select(b.fcmp_ordered(">", floored, high), high, floored)
        # (3: a LeakyReLU's slope where the value is not above 0, floor and ceiling infinite)
        sloped = b.select(b.fcmp_unordered("<=", clamped, ir.Constant(vector, None)), b.fmul(clamped, slope), clamped)
        clamped = b.select(b.icmp_signed("==", epilogue, const(3)), sloped, clamped)
        return b.select(b.icmp_signed(">=", epilogue, const(2)), clamped, floored)

    def combine(total, value, weight, exact=True):
        if pooling:  # a NaN in the window wins (value != value), and stays (NaN < value is false)
            if not exact:  # (a block without a NaN: one compare, which LLVM makes one vmaxps)
                return b.select(b.fcmp_ordered(">", value, total), value, total)
            wins = b.or_(b.fcmp_ordered(">", value, total), b.fcmp_unordered("uno", value, value))
            return b.select(wins, value, total)
        return b.fadd(total, b.fmul(weight, value, flags=CONTRACT), flags=CONTRACT)

    def block(index):
        image, block_index = b.sdiv(index, blocks_per_image), b.srem(index, blocks_per_image)
        first_channel = b.mul(block_index, const(width))
        count = b.sub(channels, first_channel)
        planes = b.add(b.mul(image, channels), first_channel)
        plane_in, plane_out = b.gep(source, [b.mul(planes, positions)]), b.gep(target, [b.mul(planes, outputs)])
        if pooling:
            block_weights, start_value = None, border_value
        else:
            block_weights = b.gep(weights, [b.mul(b.mul(block_index, taps), const(width))])
            start_value = b.load(at(bias, first_channel), align=align.constant)

        def channel_mask(r, lanes_left):
            """The lanes of channel r's row within `lanes_left` (nothing for a channel past the last)."""
            inside = b.icmp_signed("<", lane, splat(lanes_left, ir.VectorType(I64, width)))
            return b.select(b.icmp_signed("<", const(r), count), inside, no_lanes)

        if pooling:
            b.store(no_lanes, nan_lanes)

        def read_chunk(first):
            mask = [channel_mask(r, b.sub(positions, first)) for r in range(width)]
            rows = [b.call(masked_load, [at(plane_in, b.add(b.mul(const(r), positions), first)), align, mask[r],
                                         zeros]) for r in range(width)]
            if pooling:  # (the lanes that held a NaN: the block's windows then keep it the slower way)
                seen = b.load(nan_lanes)
                for row in rows:
                    seen = b.or_(seen, b.fcmp_unordered("uno", row, row))
                b.store(seen, nan_lanes)
            for k, column in enumerate(transpose(b, rows)):
                b.store(column, at(read_plane, b.add(first, const(k))), align=VECTOR_BYTES)
        loop(b, const(0), positions, read_chunk, "read", step=width)

        def place_row(y):
            into = b.add(b.mul(b.add(y, ph), wide), pw)
            loop(b, const(0), w, lambda x: b.store(b.load(at(dense, b.add(b.mul(y, w), x)), align=VECTOR_BYTES),
                                                  at(bordered, b.add(into, x)), align=VECTOR_BYTES), "place")
        with b.if_then(b.not_(borderless)):
            loop(b, const(0), border_positions, lambda p: b.store(border_value, at(bordered, p), align=VECTOR_BYTES),
                 "border")
            loop(b, const(0), h, place_row, "rows")
        out_plane = dense  # (the dense input is placed, or was never needed: its scratch holds the outputs)

        def window_3x3(oy, exact):
            """A row's outputs GROUP at a time (the last group's past the row's end are its last
            output again, stored twice), each output's window rows combined apart: 3 * GROUP chains
            in flight, where one chain of 9 waited on each multiply-add."""
            def group(first):
                last = b.sub(ow, const(1))
                for j in range(GROUP):
                    ox = b.add(first, const(j))
                    ox = b.select(b.icmp_signed("<", ox, ow), ox, last)
                    corner = b.add(b.mul(b.mul(oy, sh), wide), b.mul(ox, sw))
                    rows = []
                    for ky in range(3):
                        # (a maximum starts from the row's first tap: from -inf it would take it anyway)
                        total = value_at(corner, const(ky), const(0)) if pooling else start_value if ky == 0 \
                            else zeros
                        for kx in range(1 if pooling else 0, 3):
                            total = tap(total, corner, const(ky), const(kx), 3, exact)
                        rows.append(total)
                    total = rows[0]
                    for row in rows[1:]:
                        total = combine(total, row, None, exact) if pooling else b.fadd(total, row)
                    b.store(finish(total), at(out_plane, b.add(b.mul(oy, ow), ox)), align=VECTOR_BYTES)
            loop(b, const(0), ow, group, "ox", step=GROUP)

        def window(oy, exact):
            """A row's outputs one at a time, any window."""
            def output(ox):
                corner = b.add(b.mul(b.mul(oy, sh), wide), b.mul(ox, sw))
                b.store(start_value, accumulator)
                loop(b, const(0), kh, lambda ky: loop(
                    b, const(0), kw, lambda kx: b.store(tap(b.load(accumulator), corner, ky, kx, kw, exact), accumulator),
                    "kx"), "ky")
                b.store(finish(b.load(accumulator)), at(out_plane, b.add(b.mul(oy, ow), ox)), align=VECTOR_BYTES)
            loop(b, const(0), ow, output, "ox")

        def value_at(corner, ky, kx):
            return b.load(at(bordered, b.add(corner, b.add(b.mul(b.mul(ky, dh), wide), b.mul(kx, dw)))),
                          align=VECTOR_BYTES)

        def tap(total, corner, ky, kx, kernel_w, exact):
            value = value_at(corner, ky, kx)
            if pooling:
                return combine(total, value, None, exact)
            kernel_w = const(kernel_w) if isinstance(kernel_w, int) else kernel_w
            weight = b.load(at(block_weights, b.mul(b.add(b.mul(ky, kernel_w), kx), const(width))), align=align.constant)
            return combine(total, value, weight)

        three = b.and_(b.icmp_signed("==", kh, const(3)), b.icmp_signed("==", kw, const(3)))

        def windows(exact: bool) -> None:
            with b.if_else(three) as (square, other):
                with square:
                    loop(b, const(0), oh, lambda oy: window_3x3(oy, exact), "oy")
                with other:
                    loop(b, const(0), oh, lambda oy: window(oy, exact), "oy")
        if not pooling:
            windows(True)
        else:
            any_nan = b.icmp_unsigned("!=", b.bitcast(b.load(nan_lanes), ir.IntType(width)), ir.Constant(ir.IntType(width), 0))
            with b.if_else(any_nan) as (with_nan, without_nan):
                with with_nan:
                    windows(True)
                with without_nan:
                    windows(False)

        def write_chunk(first):
            columns = [b.load(at(out_plane, b.add(first, const(k))), align=VECTOR_BYTES) for k in range(width)]
            for r, row in enumerate(transpose(b, columns)):
                b.call(masked_store, [row, at(plane_out, b.add(b.mul(const(r), outputs), first)), align,
                                      channel_mask(r, b.sub(outputs, first))])
        loop(b, const(0), outputs, write_chunk, "write", step=width)
    loop(b, start, end, block, "block")
    b.ret_void()
