"""pixel_shuffle for the executor's segment programs, as a native loop.

Each output row (n, c, h*r + i) is r input rows interleaved: out[w*r + j] = x[n, c*r*r + i*r + j, h,
w]. A factor of 2, 3 or 4 runs with it a constant, so that the vectorizer writes whole vectors of
the interleaved row (a copy through the programs' generic strided copy works out each 3-value row's
place with five divisions: twice numpy's time).

`scriptc_pixel_shuffle_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): output rows
[start, end) of N*C*H*r; ptrs = [input (N, C*r*r, H, W) contiguous, output]; meta = [C, H, W, r].
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_pixel_shuffle_f32", ir.FloatType()),
             "float64": ("scriptc_pixel_shuffle_f64", ir.DoubleType())}
CONSTANT_FACTORS = (2, 3, 4)


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (x, out), (channels, h, w, factor) = loop_arguments(b, args, element, 2, 4)

    def const(value):
        return ir.Constant(I64, value)
    plane = b.mul(h, w)

    def rows(r):
        def row(q):
            i = b.srem(q, r)
            rest = b.sdiv(q, r)
            y = b.srem(rest, h)
            image_channel = b.sdiv(rest, h)  # n * C + c
            first = b.add(b.mul(image_channel, b.mul(r, r)), b.mul(i, r))  # the input channel of j = 0
            source = b.gep(x, [b.add(b.mul(first, plane), b.mul(y, w))])
            target = b.gep(out, [b.mul(q, b.mul(w, r))])

            def column(ix):
                def one(j):
                    value = b.load(b.gep(source, [b.add(b.mul(j, plane), ix)]))
                    b.store(value, b.gep(target, [b.add(b.mul(ix, r), j)]))
                if isinstance(r, ir.Constant):
                    for j in range(r.constant):
                        one(const(j))
                else:
                    loop(b, const(0), r, one, "j")
            loop(b, const(0), w, column, "ix")
        loop(b, start, end, row, "q")

    def by_factor(choices):
        if not choices:
            rows(factor)
            return
        with b.if_else(b.icmp_signed("==", factor, const(choices[0]))) as (then, otherwise):
            with then:
                rows(const(choices[0]))
            with otherwise:
                by_factor(choices[1:])
    by_factor(list(CONSTANT_FACTORS))
    b.ret_void()
