"""A straight-line plan run by one native call: the executor's batch-1 path for chains of layers.

A batch-1 MLP layer is a BLAS GEMV and an epilogue kernel of a few microseconds; called from
Python, each step costs more in glue (argument lists, launch lookups, ctypes calls: ~13 us over
three layers here, on top of ~17 us of calls into BLAS and kernels) than its kernel runs. For a
graph that is nothing but such steps, the executor writes the whole call down once per input
signature as a program of records and runs it with one ctypes call into `scriptc_run_chain`.

A program is an array of int64 words, records one after another:
    KERNEL      fn, total, ptrs, meta      fn(0, total, ptrs, meta): a compiled group's kernel
    GEMV_F32    fn, k, n, a, x, y          fn(row-major, transposed, k, n, 1, a, n, x, 1, 0, y, 1):
    GEMV_F64    (the same, in double)      y = x @ a for a contiguous (k, n) a, cblas_?gemv's 64-bit
                                           integer interface, as numpy calls it for a vector @ matrix
    END
"""

from __future__ import annotations

from llvmlite import ir

from .threads import KERNEL

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
END, KERNEL_RECORD, GEMV_F32, GEMV_F64 = 0, 1, 2, 3
RECORD_WORDS = {KERNEL_RECORD: 5, GEMV_F32: 7, GEMV_F64: 7}
NAME = "scriptc_run_chain"
_ROW_MAJOR, _TRANSPOSED = 101, 112


def function() -> int:
    """The address of scriptc_run_chain, compiled once per machine."""
    from .build import compiled

    return compiled("chain", ("native/chain", "native/threads"), module, [NAME])[NAME]


def module(triple: str) -> ir.Module:
    m = ir.Module(name=NAME)
    m.triple = triple
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [I64.as_pointer()]), name=NAME)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    program = fn.args[0]
    entry = b.block
    loop, done = fn.append_basic_block("record"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    at = b.phi(I64, "at")
    at.add_incoming(ir.Constant(I64, 0), entry)

    def word(offset: int):
        return b.load(b.gep(program, [b.add(at, ir.Constant(I64, offset))]))

    def pointer(offset: int, to: ir.Type):
        return b.inttoptr(word(offset), to)

    switch = b.switch(word(0), done)  # END, or a kind this runner does not know, stops it
    for record, size in RECORD_WORDS.items():
        block = fn.append_basic_block(f"kind{record}")
        switch.add_case(ir.Constant(I64, record), block)
        b.position_at_end(block)
        if record == KERNEL_RECORD:
            b.call(pointer(1, KERNEL.as_pointer()), [ir.Constant(I64, 0), word(2),
                                                     pointer(3, I8.as_pointer().as_pointer()),
                                                     pointer(4, I64.as_pointer())])
        else:
            real = ir.FloatType() if record == GEMV_F32 else ir.DoubleType()
            data = real.as_pointer()
            gemv = ir.FunctionType(ir.VoidType(), [I32, I32, I64, I64, real, data, I64, data, I64, real, data, I64])
            k, n = word(2), word(3)
            b.call(pointer(1, gemv.as_pointer()),
                   [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _TRANSPOSED), k, n, ir.Constant(real, 1.0),
                    pointer(4, data), n, pointer(5, data), ir.Constant(I64, 1), ir.Constant(real, 0.0),
                    pointer(6, data), ir.Constant(I64, 1)])
        at.add_incoming(b.add(at, ir.Constant(I64, size)), b.block)
        b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return m
