"""Depthwise 2-D convolution (groups == input channels == output channels), as a native loop.

As im2col + GEMM, a depthwise convolution is one product per channel of a 1 x KH*KW row by a
KH*KW x OH*OW block of columns: the columns cost a copy of 9x the input, and a GEMM tile meant for
8 rows computes one. Directly, each output row accumulates, per kernel tap, the tap's weight times
a run of one input row - a multiply-add over contiguous memory that vectorizes (at stride 1).

That pays where rows are long. Planes of short rows (MobileNet's 8x8 to 2x2 at a small input: a
loop per tap and row of 2-16 outputs, each set up, vectorized and finished, took ~1 us an output
row) and strided ones (whose loads were scalar) go a vector of outputs at a time instead, across
rows: per tap, one masked gather of the inputs of LANES consecutive outputs of the plane, their
(row, column) read from `positions` tables (Python makes them, one per output size), the sum in a
register from the bias to the store.

`scriptc_depthwise_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): planes [start,
end) of a contiguous (N*C, H, W) input; ptrs = [input, weight (C, KH*KW), bias (C), output
(N*C, OH, OW), floor (1), output rows, output columns (`positions`)]; meta = [C, H, W, OH, OW, KH,
KW, SH, SW, PH, PW, DH, DW, floored]: output = bias + the taps' products (zero padding), then
maximum(output, floor) where floored is 1 (a fused ReLU's 0; numpy's maximum, so a NaN stays).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_depthwise_f32", ir.FloatType()),
             "float64": ("scriptc_depthwise_f64", ir.DoubleType())}
_CONTRACT = ("contract",)
I32 = ir.IntType(32)
VECTOR_BYTES = 64
# Rows shorter than this many vectors go by gathers.
GATHER_BELOW_VECTORS = 2


def lanes(dtype: str) -> int:
    return VECTOR_BYTES // (8 if dtype == "float64" else 4)


def positions(oh: int, ow: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The output row and column of each position of an (OH, OW) plane, as int32, padded to whole
    vectors with a row no tap reaches (so its lanes load nothing)."""
    count = -(-oh * ow // lanes(dtype)) * lanes(dtype)
    flat = np.arange(count, dtype=np.int64)
    rows = np.where(flat < oh * ow, flat // max(ow, 1), -(1 << 24)).astype(np.int32)
    return rows, (flat % max(ow, 1)).astype(np.int32)


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (source, weight, bias, target, floor), meta = loop_arguments(b, args, element, 5, 14)
    row_table, column_table = (b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, k)])), I32.as_pointer())
                               for k in (5, 6))
    width = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
    accumulator = b.alloca(ir.VectorType(element, width))
    functions = _vector_functions(b.module, element, width)
    channels, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, floored = meta
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    image, plane, taps = b.mul(h, w), b.mul(oh, ow), b.mul(kh, kw)
    floor_value = b.load(floor)
    maximum = b.module.declare_intrinsic("llvm.maximum", [element], ir.FunctionType(element, [element, element]))

    def clamp(value, lo, hi):
        value = b.select(b.icmp_signed("<", value, lo), lo, value)
        return b.select(b.icmp_signed(">", value, hi), hi, value)

    def ceil_div(a, d):  # for a >= 0, d > 0
        return b.sdiv(b.add(a, b.sub(d, one)), d)

    def planes(p):
        c = b.srem(p, channels)
        x = b.gep(source, [b.mul(p, image)])
        out = b.gep(target, [b.mul(p, plane)])
        taps_of = b.gep(weight, [b.mul(c, taps)])
        start_value = b.load(b.gep(bias, [c]))

        def out_row(oy):
            row = b.gep(out, [b.mul(oy, ow)])
            loop(b, zero, ow, lambda ox: b.store(start_value, b.gep(row, [ox])), "init")
            top = b.sub(b.mul(oy, sh), ph)

            def tap_row(ky):
                iy = b.add(top, b.mul(ky, dh))
                inside = b.and_(b.icmp_signed(">=", iy, zero), b.icmp_signed("<", iy, h))
                with b.if_then(inside):
                    line = b.gep(x, [b.mul(iy, w)])

                    def tap(kx):
                        tap_weight = b.load(b.gep(taps_of, [b.add(b.mul(ky, kw), kx)]))
                        offset = b.sub(b.mul(kx, dw), pw)  # input column of output column ox: ox*SW + offset
                        # outputs whose input column is inside the row: ox in [lo, hi)
                        lo = clamp(ceil_div(clamp(b.sub(zero, offset), zero, b.mul(ow, sw)), sw), zero, ow)
                        hi = clamp(ceil_div(clamp(b.sub(w, offset), zero, b.mul(ow, sw)), sw), lo, ow)

                        def accumulate_at(stride):
                            def accumulate(ox):
                                slot = b.gep(row, [ox])
                                v = b.load(b.gep(line, [b.add(b.mul(ox, stride), offset)]))
                                b.store(b.fadd(b.load(slot), b.fmul(tap_weight, v, flags=_CONTRACT),
                                               flags=_CONTRACT), slot)
                            loop(b, lo, hi, accumulate, "ox")
                        # stride 1 as a constant: the vectorizer then loads whole vectors
                        with b.if_else(b.icmp_signed("==", sw, one)) as (unit, other):
                            with unit:
                                accumulate_at(one)
                            with other:
                                accumulate_at(sw)
                    loop(b, zero, kw, tap, "kx")
            loop(b, zero, kh, tap_row, "ky")
            with b.if_then(b.icmp_signed("!=", floored, zero)):
                loop(b, zero, ow, lambda ox: b.store(b.call(maximum, [b.load(b.gep(row, [ox])), floor_value]),
                                                     b.gep(row, [ox])), "floor")
        gathered = b.or_(b.icmp_signed("<", ow, ir.Constant(I64, GATHER_BELOW_VECTORS * width)),
                         b.icmp_signed("!=", sw, one))
        with b.if_else(gathered) as (by_vectors, by_rows):
            with by_vectors:
                _gathered_plane(b, element, width, x, out, taps_of, start_value, (row_table, column_table), meta,
                                floor_value, accumulator, functions)
            with by_rows:
                loop(b, zero, oh, out_row, "oy")
    loop(b, start, end, planes, "plane")
    b.ret_void()


def _vector_functions(module: ir.Module, element, width: int) -> tuple:
    """The masked gather, masked store and maximum of `width` lanes of `element`."""
    vector, masks = ir.VectorType(element, width), ir.VectorType(ir.IntType(1), width)
    pointers = ir.VectorType(element.as_pointer(), width)
    suffix = f"v{width}{'f64' if element == ir.DoubleType() else 'f32'}"
    gather = ir.Function(module, ir.FunctionType(vector, [pointers, I32, masks, vector]),
                         f"llvm.masked.gather.{suffix}.v{width}p0")
    masked_store = ir.Function(module, ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), I32, masks]),
                               f"llvm.masked.store.{suffix}.p0")
    maximum = ir.Function(module, ir.FunctionType(vector, [vector, vector]), f"llvm.maximum.{suffix}")
    return gather, masked_store, maximum


def _gathered_plane(b: ir.IRBuilder, element, width: int, x, out, taps_of, start_value, tables, meta,
                    floor_value, accumulator, functions) -> None:
    """One plane, a vector of LANES consecutive outputs at a time (the module docstring)."""
    _, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, floored = meta
    vector, indices = ir.VectorType(element, width), ir.VectorType(I32, width)
    addresses = ir.VectorType(I64, width)
    pointers = ir.VectorType(element.as_pointer(), width)
    zero, align = ir.Constant(I64, 0), ir.Constant(I32, 8 if element == ir.DoubleType() else 4)
    element_bytes = ir.Constant(addresses, [8 if element == ir.DoubleType() else 4] * width)
    nothing = ir.Constant(vector, [0.0] * width)

    def splat(scalar, kind):
        return b.shuffle_vector(b.insert_element(ir.Constant(kind, ir.Undefined), scalar, ir.Constant(I32, 0)),
                                ir.Constant(kind, ir.Undefined), ir.Constant(ir.VectorType(I32, width), [0] * width))

    def narrow(value):
        return splat(b.trunc(value, I32), indices)

    lane = ir.Constant(indices, list(range(width)))
    total = b.trunc(b.mul(oh, ow), I32)
    base = splat(b.ptrtoint(x, I64), addresses)
    height, row_length = narrow(h), narrow(w)
    zeros = ir.Constant(indices, [0] * width)
    gather, masked_store, maximum = functions

    def chunk(first):
        rows = b.load(b.bitcast(b.gep(tables[0], [first]), indices.as_pointer()), align=4)
        columns = b.load(b.bitcast(b.gep(tables[1], [first]), indices.as_pointer()), align=4)
        top, left = b.mul(rows, narrow(sh)), b.mul(columns, narrow(sw))
        b.store(splat(start_value, vector), accumulator)

        def tap_row(ky):
            iy = b.add(top, narrow(b.sub(b.mul(ky, dh), ph)))
            inside_rows = b.and_(b.icmp_signed(">=", iy, zeros), b.icmp_signed("<", iy, height))
            line = b.mul(iy, row_length)

            def tap(kx):
                ix = b.add(left, narrow(b.sub(b.mul(kx, dw), pw)))
                inside = b.and_(inside_rows, b.and_(b.icmp_signed(">=", ix, zeros), b.icmp_signed("<", ix, row_length)))
                offsets = b.mul(b.sext(b.add(line, ix), addresses), element_bytes)
                values = b.call(gather, [b.inttoptr(b.add(base, offsets), pointers), align, inside, nothing])
                tap_weight = splat(b.load(b.gep(taps_of, [b.add(b.mul(ky, kw), kx)])), vector)
                b.store(b.fadd(b.load(accumulator), b.fmul(tap_weight, values, flags=_CONTRACT), flags=_CONTRACT),
                        accumulator)
            loop(b, zero, kw, tap, "gx")
        loop(b, zero, kh, tap_row, "gy")
        result = b.load(accumulator)
        result = b.select(b.icmp_signed("!=", floored, zero), b.call(maximum, [result, splat(floor_value, vector)]),
                          result)
        stored = b.icmp_signed("<", b.add(splat(b.trunc(first, I32), indices), lane), splat(total, indices))
        b.call(masked_store, [result, b.bitcast(b.gep(out, [first]), vector.as_pointer()), align, stored])
    loop(b, zero, b.mul(oh, ow), chunk, "chunk", step=width)
