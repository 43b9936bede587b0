"""The frame of the executor's hand-written native loops (LOOPS: im2col.py, strided_columns.py, matvec.py, gemm.py,
pool.py, blocked_pool.py, depthwise.py, blocked_depthwise.py, col2im.py, shuffle.py, linear.py, pad.py, random.py):
one module per dtype, built on a disk-cache miss only, holding one function of the kernel signature
(start, end, ptrs, meta) that the runtime pool can split."""

from __future__ import annotations

import importlib

from llvmlite import ir

from scriptc.codegen.llvm.mathlib import CONTRACT

from .threads import KERNEL

I64 = ir.IntType(64)
LOOPS = ("im2col", "strided_columns", "matvec", "gemm", "pool", "blocked_pool", "depthwise", "blocked_depthwise",
         "col2im", "shuffle", "linear", "pad", "random")


def loop_function(kind: str, dtype: str) -> int:
    """The address of loop `kind` (one of LOOPS) for a dtype name, float32 or float64, compiled once
    per machine."""
    from .build import compiled

    source = importlib.import_module(f"{__package__}.{kind}")
    name = source.FUNCTIONS[dtype][0]
    sources = (f"native/{kind}", *getattr(source, "EXTRA_SOURCES", ()), "native/loops", "native/threads",
               "native/windows", "codegen/llvm/loop", "codegen/llvm/mathlib")
    return compiled(f"{kind}|{dtype}", sources, lambda triple: source.module(triple, dtype), [name])[name]


def loop_module(triple: str, name: str, element: ir.Type, build) -> ir.Module:
    """A module holding the function `name`, whose body build(builder, (start, end, ptrs, meta),
    element type) emits."""
    m = ir.Module(name=name)
    m.triple = triple
    fn = ir.Function(m, KERNEL, name=name)
    build(ir.IRBuilder(fn.append_basic_block("entry")), fn.args, element)
    return m


def loop_arguments(b: ir.IRBuilder, args, element: ir.Type, pointers: int, words: int):
    """(start, end, ptrs[:pointers] as pointers to `element`, meta[:words] loaded) of a loop's
    kernel arguments."""
    start, end, ptrs, meta = args

    def word(array, index):
        return b.load(b.gep(array, [ir.Constant(I64, index)]))
    return (start, end, [b.bitcast(word(ptrs, i), element.as_pointer()) for i in range(pointers)],
            [word(meta, i) for i in range(words)])


def splat(b: ir.IRBuilder, scalar, vector_type: ir.VectorType):
    """A vector of `vector_type` with `scalar` in every lane."""
    lanes = vector_type.count
    undefined = ir.Constant(vector_type, ir.Undefined)
    return b.shuffle_vector(b.insert_element(undefined, scalar, ir.Constant(ir.IntType(32), 0)), undefined,
                            ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))


def multiply_add_rows(b: ir.IRBuilder, accumulators, rows, k, values, vector_type: ir.VectorType) -> None:
    """accumulators[r][v] += rows[r][k] * values[v]: one step of a register tile of a matrix product
    (the accumulators are stack slots LLVM promotes to registers; CONTRACT lets each multiply-add be
    one FMA, each product still added in order)."""
    for r, row in enumerate(rows):
        broadcast = splat(b, b.load(b.gep(row, [k])), vector_type)
        for v, value in enumerate(values):
            total = b.fadd(b.load(accumulators[r][v]), b.fmul(broadcast, value, flags=CONTRACT), flags=CONTRACT)
            b.store(total, accumulators[r][v])


def opaque(b: ir.IRBuilder, value):
    """`value`, through an empty inline asm that LLVM cannot see into: a register tile's row pointers
    made so stay one base register each, indexed by k, where LLVM, seeing their common stride,
    rebuilt them from one with a chain of adds every step (MLP b64's layers ~7% slower, a GEMM's
    first block of rows 2-4%)."""
    return b.call(ir.InlineAsm(ir.FunctionType(value.type, [value.type]), "", "=r,0"), [value])
