"""The GEMMs of a Winograd transform's positions as one kernel, so that a pool splits them all at once.

F(2x2, 3x3) multiplies 16 products a band (winograd.py), F(2x2, 2x2) 9 a step (winograd_phases.py),
each a GEMM of a few microseconds: split one by one across threads, each paid a hand-off and a wait
for the slowest slice (super-res's 64 -> 64 layers at two threads: 1.1x their one-thread speed).
Here the range counts (position, vector of columns) pairs, position after position, and a slice
runs each position's part of it through the GEMM loop: one hand-off for all of them, the slices
even whatever the count of positions. A column's products are the GEMM loop's whatever slice holds
them, so the bits are those of the GEMMs run one by one, at any count of threads.

`scriptc_gemm_positions` has the kernel signature (start, end, ptrs, meta): ptrs = [a, b, out,
bias, bounds] of position 0 (gemm.py's); meta = [the GEMM loop's address, positions, vectors (of
each position's columns), the bytes from one position's a to the next, b's, out's, then the GEMM
loop's 7 words].
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .threads import KERNEL

I8, I64 = ir.IntType(8), ir.IntType(64)
NAME = "scriptc_gemm_positions"
WORDS = 6


def function() -> int:
    """The address of the kernel, compiled once per machine."""
    from .build import compiled

    return compiled("gemm_positions", ("native/positions", "native/threads", "codegen/llvm/loop"), _module,
                    [NAME])[NAME]


def _module(triple: str) -> ir.Module:
    m = ir.Module(name=NAME)
    m.triple = triple
    fn = ir.Function(m, KERNEL, name=NAME)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    start, end, ptrs, meta = fn.args

    def const(value):
        return ir.Constant(I64, value)

    def word(index):
        return b.load(b.gep(meta, [const(index)]))
    product = b.inttoptr(word(0), KERNEL.as_pointer())
    vectors, steps = word(2), [word(3 + k) for k in range(3)]
    bases = [b.load(b.gep(ptrs, [const(k)])) for k in range(5)]
    moved = b.alloca(I8.as_pointer(), 5)
    for k in range(3, 5):
        b.store(bases[k], b.gep(moved, [const(k)]))

    def position(p):
        first = b.mul(p, vectors)
        low = b.sub(b.select(b.icmp_signed(">", start, first), start, first), first)
        high = b.sub(b.select(b.icmp_signed("<", end, b.add(first, vectors)), end, b.add(first, vectors)), first)
        with b.if_then(b.icmp_signed("<", low, high)):
            for k in range(3):
                b.store(b.gep(bases[k], [b.mul(p, steps[k])]), b.gep(moved, [const(k)]))
            b.call(product, [low, high, moved, b.gep(meta, [const(WORDS)])])
    first_position = b.sdiv(start, vectors)
    last_position = b.sdiv(b.add(end, b.sub(vectors, const(1))), vectors)
    with b.if_then(b.icmp_signed(">", vectors, const(0))):
        loop(b, first_position, b.select(b.icmp_signed("<", last_position, word(1)), last_position, word(1)),
             position, "positions")
    b.ret_void()
    return m
