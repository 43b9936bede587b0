"""A few rows times a matrix, for the executor's matmul heads, as a native loop.

A layer called with a batch of a few rows reads the whole weight matrix and does a few flops per
weight: its time is the time to stream the weights. OpenBLAS's GEMM is slow there - for the
MLP's 784x512 float32 layer, 2 rows take it 110-130 us and 6 rows ~230 us, where its batch-1
GEMV streams the same 1.6 MB in 30-40 us. This loop streams them once for all the rows: 2 rows
in 60-80 us on one core, 40-55 us split across two, 6 rows in ~100 us split (the executor's
matmul heads use it for 2 to MATVEC_MAX_ROWS rows, heads.py; one row stays with BLAS's GEMV,
which streams faster than this loop does alone).

`scriptc_matvec_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): ptrs = [a (M, K),
b (K, N), partials (P, M, N)], all contiguous; meta = [M, K, N, P]. The range counts the P chunks
of k: chunk p writes partials[p] = a[:, k0:k1] @ b[k0:k1, :] for its contiguous slice of b's rows
(each core streams its own part of memory; splitting the columns instead had both cores read
every row and gained nothing), and the caller adds the partials. Within a chunk each output adds
its products in order of k, four rows of b per pass over the output row.
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop
from scriptc.codegen.llvm.mathlib import CONTRACT

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_matvec_f32", ir.FloatType()), "float64": ("scriptc_matvec_f64", ir.DoubleType())}
_UNROLL = 4         # rows of b per pass over the output


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:

    start, end, (a, matrix, partials), (rows, depth, width, chunks) = loop_arguments(b, args, element, 3, 4)

    def const(value):
        return ir.Constant(I64, value)
    zero = ir.Constant(element, 0.0)

    def chunk(p):
        first = b.sdiv(b.mul(p, depth), chunks)
        last = b.sdiv(b.mul(b.add(p, const(1)), depth), chunks)
        out = b.gep(partials, [b.mul(p, b.mul(rows, width))])
        size = b.mul(rows, width)
        loop(b, const(0), size, lambda i: b.store(zero, b.gep(out, [i])), "zero")

        def accumulate(k, count):
            """out += a[:, k:k+count] @ b[k:k+count, :], in order of k."""
            lines = [b.gep(matrix, [b.mul(b.add(k, const(j)), width)]) for j in range(count)]

            def row(r):
                weights = [b.load(b.gep(a, [b.add(b.mul(r, depth), b.add(k, const(j)))])) for j in range(count)]
                line = b.gep(out, [b.mul(r, width)])

                def column(c):
                    target = b.gep(line, [c])
                    total = b.load(target)
                    for weight, source in zip(weights, lines):
                        total = b.fadd(total, b.fmul(weight, b.load(b.gep(source, [c])), flags=CONTRACT),
                                       flags=CONTRACT)
                    b.store(total, target)
                loop(b, const(0), width, column, "c")
            loop(b, const(0), rows, row, "m")

        unrolled = b.add(first, b.mul(b.sdiv(b.sub(last, first), const(_UNROLL)), const(_UNROLL)))
        loop(b, first, unrolled, lambda k: accumulate(k, _UNROLL), "k", step=_UNROLL)
        loop(b, unrolled, last, lambda k: accumulate(k, 1), "rest")
    loop(b, start, end, chunk, "chunk")
    b.ret_void()
