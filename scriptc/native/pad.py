"""F.pad of the last two dims (every mode) for the executor's segment programs, as a native loop.

The mode lives in two index tables made when the program is built (ops/padding.py's source_index:
per output row, then per output column, the input position it copies, -1 where the constant fills).
Each output row copies its input row's one contiguous run (the interior: a plain copy the vectorizer
widens) and looks up the few border columns in the column table; a row the table marks -1 is all
constant.

`scriptc_pad_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): output rows [start,
end) of planes*OH; ptrs = [input (planes, H, W) contiguous, output (planes, OH, OW), row table (OH
int64), column table (OW int64), the constant (one value)]; meta = [H, W, OH, OW, the run's first
output column, its length, its first input column].
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_pad_f32", ir.FloatType()),
             "float64": ("scriptc_pad_f64", ir.DoubleType())}


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (x, out), (h, w, out_h, out_w, run_out, run_length, run_in) = loop_arguments(b, args, element, 2, 7)
    tables = [b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, i)])), I64.as_pointer()) for i in (2, 3)]
    fill = b.load(b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, 4)])), element.as_pointer()))
    zero = ir.Constant(I64, 0)

    def row(q):
        target = b.gep(out, [b.mul(q, out_w)])
        source_row = b.load(b.gep(tables[0], [b.srem(q, out_h)]))
        with b.if_else(b.icmp_signed("<", source_row, zero)) as (constant_row, copied_row):
            with constant_row:
                loop(b, zero, out_w, lambda j: b.store(fill, b.gep(target, [j])), "fill")
            with copied_row:
                source = b.gep(x, [b.mul(b.add(b.mul(b.sdiv(q, out_h), h), source_row), w)])
                interior_source, interior_target = b.gep(source, [run_in]), b.gep(target, [run_out])
                loop(b, zero, run_length,
                     lambda j: b.store(b.load(b.gep(interior_source, [j])), b.gep(interior_target, [j])), "run")

                def border(j):
                    column = b.load(b.gep(tables[1], [j]))
                    inside = b.icmp_signed(">=", column, zero)
                    value = b.select(inside, b.load(b.gep(source, [b.select(inside, column, zero)])), fill)
                    b.store(value, b.gep(target, [j]))
                loop(b, zero, run_out, border, "left")
                loop(b, b.add(run_out, run_length), out_w, border, "right")
    loop(b, start, end, row, "q")
    b.ret_void()
