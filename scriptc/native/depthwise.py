"""Depthwise 2-D convolution (groups == input channels == output channels), as a native loop.

As im2col + GEMM, a depthwise convolution is one product per channel of a 1 x KH*KW row by a
KH*KW x OH*OW block of columns: the columns cost a copy of 9x the input, and a GEMM tile meant for
8 rows computes one. Directly, each output row accumulates, per kernel tap, the tap's weight times
a run of one input row - a multiply-add over contiguous memory that vectorizes (at stride 1).

Every plane goes a vector of outputs at a time, the tap's values combined in a register (windows.py:
masked loads of consecutive inputs where it can, gathers where it cannot); the row loop here is left
for long rows at strides past 2. MobileNetV2's depthwise layers at 2x3x64x64 took 1.14 ms in row
loops and gathers, 0.44 ms so.

`scriptc_depthwise_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): planes [start,
end) of a contiguous (N*C, H, W) input; ptrs = [input, weight (C, KH*KW), bias (C), output
(N*C, OH, OW), bounds (3), output rows, output columns (windows.positions)]; meta = [C, H, W, OH, OW,
KH, KW, SH, SW, PH, PW, DH, DW, epilogue]: output = bias + the taps' products (zero padding), then
for epilogue 1 maximum(output, bounds[0]) (a fused ReLU's 0; numpy's maximum, so a NaN stays) and for
2 also the minimum of that and bounds[1] (a ReLU6's 6; a NaN stays), for 3 where(output > 0, output,
output * bounds[2]) (a LeakyReLU; heads.epilogue).
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop
from scriptc.codegen.llvm.mathlib import CONTRACT

from .loops import loop_arguments, loop_module
from .windows import Gathered

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_depthwise_f32", ir.FloatType()),
             "float64": ("scriptc_depthwise_f64", ir.DoubleType())}


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (source, weight, bias, target, bounds), meta = loop_arguments(b, args, element, 5, 14)
    tables = [b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, k)])), ir.IntType(32).as_pointer()) for k in (5, 6)]
    gathered = Gathered(b, element)
    channels, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode = meta
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    image, plane, taps = b.mul(h, w), b.mul(oh, ow), b.mul(kh, kw)
    floor_value, ceiling_value = (b.load(b.gep(bounds, [ir.Constant(I64, k)])) for k in (0, 1))
    maximum = b.module.declare_intrinsic("llvm.maximum", [element], ir.FunctionType(element, [element, element]))

    slope_value = b.load(b.gep(bounds, [ir.Constant(I64, 2)]))
    leaky = b.icmp_signed("==", mode, ir.Constant(I64, 3))

    def bounded(value, low, high, maximum_function, slope=slope_value):
        """maximum(value, low), then (mode 2) the lesser of that and high, a NaN kept (it compares false);
        (mode 3, low and high infinite) value * slope where value is not above 0, a LeakyReLU's."""
        floored = b.call(maximum_function, [value, low])
        clamped = b.select(b.fcmp_ordered(">", floored, high), high, floored)
        clamped = b.select(leaky, b.select(b.fcmp_unordered("<=", clamped, ir.Constant(clamped.type, None)),
                                           b.fmul(clamped, slope), clamped), clamped)
        return b.select(b.icmp_signed(">", mode, one), clamped, floored)

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
                                b.store(b.fadd(b.load(slot), b.fmul(tap_weight, v, flags=CONTRACT),
                                               flags=CONTRACT), slot)
                            loop(b, lo, hi, accumulate, "ox")
                        # stride 1 as a constant: the vectorizer then loads whole vectors
                        with b.if_else(b.icmp_signed("==", sw, one)) as (unit, other):
                            with unit:
                                accumulate_at(one)
                            with other:
                                accumulate_at(sw)
                    loop(b, zero, kw, tap, "kx")
            loop(b, zero, kh, tap_row, "ky")
            with b.if_then(b.icmp_signed("!=", mode, zero)):
                loop(b, zero, ow, lambda ox: b.store(bounded(b.load(b.gep(row, [ox])), floor_value, ceiling_value,
                                                             maximum), b.gep(row, [ox])), "bounds")
        def combine(total, values, ky, kx):
            tap_weight = gathered.splat(b.load(b.gep(taps_of, [b.add(b.mul(ky, kw), kx)])))
            return b.fadd(total, b.fmul(tap_weight, values, flags=CONTRACT), flags=CONTRACT)

        def finish(total, first, stored):
            return b.select(b.icmp_signed("!=", mode, zero), bounded(total, gathered.splat(floor_value),
                                                                      gathered.splat(ceiling_value), gathered.maximum,
                                                                      gathered.splat(slope_value)),
                            total)
        geometry = (h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
        zeros = ir.Constant(gathered.vector, [0.0] * gathered.width)
        gathered.windows(x, out, tables, geometry, gathered.splat(start_value), combine, finish, zeros,
                         lambda: loop(b, zero, oh, out_row, "oy"))
    loop(b, start, end, planes, "plane")
    b.ret_void()
