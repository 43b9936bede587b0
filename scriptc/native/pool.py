"""2-D max and average pooling, as a native loop.

The op table's pooling takes views of every window and reduces them with numpy (argmax and a
gather for the max): for mnist's 16x64x24x24 max_pool2d, ~10 ms where the convolution before it
takes about as long. This loop reads each window in place, skipping what hangs over the border.

Planes go a vector of outputs at a time (windows.py; the loop here, output by output, is left for long
rows at strides past 2 and windows of many taps): SqueezeNet's 3x3 pools of 31x31 to 7x7 planes spent
~20% of its time here, output by output.

`scriptc_pool_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): planes [start, end)
of an (N*C, H, W) input; ptrs = [input, output (N*C, OH, OW), divisors (OH, OW): what each average
divides by, output rows, output columns (windows.positions)]; meta = [H, W, OH, OW, KH, KW, SH, SW,
PH, PW, DH, DW, mode]: mode 0 takes the maximum
(a NaN in the window wins, as PyTorch's), 1 the sum over the window's part inside the image divided
by the divisor (avg_pool2d's count_include_pad and divisor_override decide the divisors, ceil_mode the
output size: Python works them out).
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module
from .windows import Gathered, inside_range

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_pool_f32", ir.FloatType()), "float64": ("scriptc_pool_f64", ir.DoubleType())}
MAX, AVERAGE = 0, 1


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (source, target, divisors), meta = loop_arguments(b, args, element, 3, 13)
    tables = [b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, k)])), ir.IntType(32).as_pointer()) for k in (3, 4)]
    gathered = Gathered(b, element)
    h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode = meta
    zero = ir.Constant(I64, 0)
    accumulator = b.alloca(element)
    image, plane = b.mul(h, w), b.mul(oh, ow)
    averages = b.icmp_signed("==", mode, ir.Constant(I64, AVERAGE))
    start_value = b.select(averages, ir.Constant(element, 0.0), ir.Constant(element, float("-inf")))

    def planes(p):
        x = b.gep(source, [b.mul(p, image)])
        out = b.gep(target, [b.mul(p, plane)])

        def out_row(oy):
            top = b.sub(b.mul(oy, sh), ph)
            ky_lo, ky_hi = inside_range(b, top, dh, h, kh)

            def out_col(ox):
                left = b.sub(b.mul(ox, sw), pw)
                kx_lo, kx_hi = inside_range(b, left, dw, w, kw)
                b.store(start_value, accumulator)

                def window_row(ky):
                    line = b.gep(x, [b.add(b.mul(b.add(top, b.mul(ky, dh)), w), left)])

                    def window_col(kx):
                        v = b.load(b.gep(line, [b.mul(kx, dw)]))
                        acc = b.load(accumulator)
                        # max: a NaN anywhere in the window wins (v != v), and stays (NaN > v is false)
                        larger = b.or_(b.fcmp_ordered(">", v, acc), b.fcmp_unordered("uno", v, v))
                        b.store(b.select(averages, b.fadd(acc, v), b.select(larger, v, acc)), accumulator)
                    loop(b, kx_lo, kx_hi, window_col, "kx")
                loop(b, ky_lo, ky_hi, window_row, "ky")
                at = b.add(b.mul(oy, ow), ox)
                with b.if_then(averages):  # (the divisors are read only for an average)
                    b.store(b.fdiv(b.load(accumulator), b.load(b.gep(divisors, [at]))), accumulator)
                b.store(b.load(accumulator), b.gep(out, [at]))
            loop(b, zero, ow, out_col, "ox")

        def combine_max(acc, values, ky, kx):
            # (as out_col's: a NaN wins and stays; padding's lanes gather the start value)
            larger = b.or_(b.fcmp_ordered(">", values, acc), b.fcmp_unordered("uno", values, values))
            return b.select(larger, values, acc)

        def combine_sum(acc, values, ky, kx):
            return b.fadd(acc, values)

        def divide(acc, first, stored):
            # (only the lanes stored read their divisors)
            return b.fdiv(acc, b.call(gathered.masked_load, [
                b.bitcast(b.gep(divisors, [first]), gathered.vector.as_pointer()), gathered.align, stored,
                gathered.splat(ir.Constant(element, 1.0))]))
        geometry = (h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
        # a loop of each mode: a maximum's windows compute no sum and divide by nothing (a division
        # a vector, selected away, cost mnist's 2x2 pool a fifth of its time)
        with b.if_else(averages) as (average, maximum):
            with average:
                start_vector = gathered.splat(ir.Constant(element, 0.0))
                gathered.windows(x, out, tables, geometry, start_vector, combine_sum, divide, start_vector,
                                 lambda: loop(b, zero, oh, out_row, "oy"))
            with maximum:
                start_vector = gathered.splat(ir.Constant(element, float("-inf")))
                gathered.windows(x, out, tables, geometry, start_vector, combine_max, lambda acc, first, stored: acc,
                                 start_vector, lambda: loop(b, zero, oh, out_row, "oy"), separable=True)
    loop(b, start, end, planes, "plane")
    b.ret_void()
