"""im2col's columns of a convolution of stride 2 across, as a native loop.

im2col.py copies the columns of rows shorter than a vector a vector of positions at a time across
rows, by a gather per channel and tap where the stride is not 1 (~10 cycles for 16 elements): DCGAN's
discriminator's conv3 (128 channels of 16x16, 4x4, stride 2: 8x8 outputs) spent 14% of its time
there. Here each output row of a tap is one masked load of the 2 * OW - 1 inputs it steps over (the
ones in the padding masked off, read as zeros) and one shuffle that keeps the even ones (a vector
of outputs at a time along longer rows). At a dilation of 1 across, the next tap's inputs are the
odd ones of the same run: one load of 2 * OW serves a pair of taps (the small CNN's conv2 phases,
32 channels of 64x64 into 2x2 phases of 33x33: 28 -> 22 us an image; DCGAN's conv3 columns 0.7x).

`scriptc_strided_columns_f32` / `_f64` have im2col's kernel signature and meta (im2col.conv2d_meta:
channels [start, end) of one image, a band of output rows, the rows of the columns RS apart), for a
geometry of stride 2 across (SW) and at least half a vector's lanes of outputs a row (takes()).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_module
from .loops import splat as vector_splat

I32, I64 = ir.IntType(32), ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_strided_columns_f32", ir.FloatType()),
             "float64": ("scriptc_strided_columns_f64", ir.DoubleType())}
VECTOR_BYTES = 64
_FIELDS = ("H", "W", "KH", "KW", "OH", "OW", "SH", "SW", "DH", "DW", "PH", "PW", "OY0", "OY1", "RS")


def takes(dtype: str, sw: int, ow: int) -> bool:
    """Whether the loop copies a convolution's columns: stride 2 across, output rows of half a
    vector's lanes or more (measured at 16 x 4x4 stride-2 windows: 128 channels of 16x16, 8 outputs
    a row, 46 -> 28 us an image; 64 of 32x32, 16 a row, 82 -> 34; the phases of 64 x 32x32, 17 a row,
    29 -> 22; but 256 of 8x8, 4 a row, 16 -> 32: there im2col's gathers fill a vector from four rows)."""
    return sw == 2 and ow >= VECTOR_BYTES // np.dtype(dtype).itemsize // 2


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, ptrs, words = args

    def const(value):
        return ir.Constant(I64, value)

    def word(index):
        return b.load(b.gep(words, [const(index)]))
    g = {field: word(k) for k, field in enumerate(_FIELDS)}
    source = b.bitcast(b.load(b.gep(ptrs, [const(0)])), element.as_pointer())
    target = b.bitcast(b.load(b.gep(ptrs, [const(1)])), element.as_pointer())
    lanes = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
    wide, narrow = ir.VectorType(element, 2 * lanes), ir.VectorType(element, lanes)
    wide_masks, narrow_masks = ir.VectorType(ir.IntType(1), 2 * lanes), ir.VectorType(ir.IntType(1), lanes)
    suffix = "f64" if element == ir.DoubleType() else "f32"
    masked_load = ir.Function(b.module, ir.FunctionType(wide, [wide.as_pointer(), I32, wide_masks, wide]),
                              f"llvm.masked.load.v{2 * lanes}{suffix}.p0")
    masked_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [narrow, narrow.as_pointer(), I32,
                                                                         narrow_masks]),
                               f"llvm.masked.store.v{lanes}{suffix}.p0")
    align = ir.Constant(I32, VECTOR_BYTES // lanes)
    evens = ir.Constant(ir.VectorType(I32, lanes), [2 * k for k in range(lanes)])
    odds = ir.Constant(ir.VectorType(I32, lanes), [2 * k + 1 for k in range(lanes)])
    wide_lane = ir.Constant(ir.VectorType(I64, 2 * lanes), list(range(2 * lanes)))
    narrow_lane = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    image = b.mul(g["H"], g["W"])
    taps = b.mul(g["KH"], g["KW"])
    narrow_indices, wide_indices = ir.VectorType(I64, lanes), ir.VectorType(I64, 2 * lanes)

    def chunk_masks(left, paired: bool):
        """(the outputs written, the inputs they step over: 2 * n - 1 of them, 2 * n for a pair of
        taps) of a chunk of rows of `left` outputs (n: at most a vector's lanes of them)."""
        stepped = b.mul(left, const(2)) if paired else b.sub(b.mul(left, const(2)), const(1))
        return (b.icmp_signed("<", narrow_lane, vector_splat(b, left, narrow_indices)),
                b.icmp_signed("<", wide_lane, vector_splat(b, stepped, wide_indices)))

    def channels(short: bool, pairs: bool):
        """Every channel's columns: each output row in one step (`short`: rows of at most a vector of
        outputs, the masks made once), or a vector of outputs at a time; with `pairs`, two adjacent
        taps from each load where the dilation across is 1."""
        whole = {paired: chunk_masks(g["OW"], paired) for paired in (False, True)} if short else None

        def channel(c):
            plane = b.gep(source, [b.mul(c, image)])

            def kernel_column(ky, kx, paired: bool):
                """Tap (ky, kx)'s columns, and with `paired` tap (ky, kx + 1)'s from the same loads
                (at a dilation of 1 across, its inputs are the odd ones of the same run)."""
                tap = b.add(b.mul(b.add(b.mul(c, taps), b.add(b.mul(ky, g["KW"]), kx)), g["RS"]),
                            b.mul(g["OY0"], b.sub(const(0), g["OW"])))

                def chunk(first_output):
                    written, stepped = whole[paired] if short else chunk_masks(b.sub(g["OW"], first_output), paired)
                    first = b.add(b.sub(b.mul(kx, g["DW"]), g["PW"]), b.mul(first_output, const(2)))
                    column = b.add(wide_lane, vector_splat(b, first, wide_indices))
                    inside = b.and_(stepped, b.and_(
                        b.icmp_signed(">=", column, ir.Constant(wide_indices, [0] * 2 * lanes)),
                        b.icmp_signed("<", column, vector_splat(b, g["W"], wide_indices))))

                    def output_row(oy):
                        y = b.sub(b.add(b.mul(oy, g["SH"]), b.mul(ky, g["DH"])), g["PH"])
                        row_inside = b.and_(b.icmp_signed(">=", y, const(0)), b.icmp_signed("<", y, g["H"]))
                        mask = b.and_(inside, vector_splat(b, row_inside, wide_masks))
                        line = b.gep(plane, [b.add(b.mul(y, g["W"]), first)])
                        # (a row in the padding: every lane masked off, loaded as zeros)
                        values = b.call(masked_load, [b.bitcast(line, wide.as_pointer()), align, mask,
                                                      ir.Constant(wide, [0.0] * 2 * lanes)])
                        out = b.gep(target, [b.add(b.add(tap, b.mul(oy, g["OW"])), first_output)])
                        for lanes_kept, at in [(evens, out), (odds, b.gep(out, [g["RS"]]))][:2 if paired else 1]:
                            b.call(masked_store, [b.shuffle_vector(values, values, lanes_kept),
                                                  b.bitcast(at, narrow.as_pointer()), align, written])
                    loop(b, g["OY0"], g["OY1"], output_row, "oy")
                if short:
                    chunk(const(0))
                else:
                    loop(b, const(0), g["OW"], chunk, "chunk", step=lanes)

            def kernel_row(ky):
                def one_by_one():
                    loop(b, const(0), g["KW"], lambda kx: kernel_column(ky, kx, False), "kx")
                if not pairs:
                    one_by_one()
                    return
                with b.if_else(b.icmp_signed("==", g["DW"], const(1))) as (adjacent, apart):
                    with adjacent:  # taps in pairs, an odd one last alone
                        loop(b, const(0), b.sub(g["KW"], const(1)), lambda kx: kernel_column(ky, kx, True), "kx",
                             step=2)
                        with b.if_then(b.icmp_signed("==", b.srem(g["KW"], const(2)), const(1))):
                            kernel_column(ky, b.sub(g["KW"], const(1)), False)
                    with apart:
                        one_by_one()
            loop(b, const(0), g["KH"], kernel_row, "ky")
        loop(b, start, end, channel, "c")
    # Paired taps store two rows of columns a load: 0.65-0.8x the time at rows of at most half a
    # vector's outputs or more than a vector's, but 1.4-2.1x on rows of more than half a vector up
    # to a whole one (DCGAN's 16x16 outputs), where the stores' alignment decides (the cause not found).
    with b.if_else(b.icmp_signed("<=", g["OW"], const(lanes))) as (short, long):
        with short:
            with b.if_else(b.icmp_signed("<=", b.mul(g["OW"], const(2)), const(lanes))) as (half, whole_vector):
                with half:
                    channels(True, True)
                with whole_vector:
                    channels(True, False)
        with long:
            channels(False, True)
    b.ret_void()
