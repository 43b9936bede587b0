"""A straight-line segment of a plan run by one native call: the program interpreter.

Called from Python, each step of a plan costs more in glue (argument lists, launch lookups, one
ctypes call each: 2-10 us) than a small kernel runs. A segment of the plan - its compiled kernels,
products, convolutions, views and the shape arithmetic between them - is written down once as a
program, and each call of the plan runs it with one ctypes call into `scriptc_run_program(frame,
program)`. The program is read-only and shared by every thread; the frame, an int64 array, is one
thread's registers: the header below, then what the program's builder (runtime/segments.py) lays
out - input objects, dims, data pointers, and the pointer and meta arrays kernels read, in place.

Dims are registers, not constants: the program reads its inputs' shapes (from numpy's array
struct, whose layout pointers.py checks) and works out every shape, buffer size and launch from
them, so one program serves every batch size. Buffers come from two arenas the caller provides:
scratch (reused every call) and out (the segment's results, handed to the caller). Phase one - the
shape arithmetic, checks and ALLOCs - comes first; RESERVE returns NEED_MEMORY with the bytes each
arena needs in the header when one is too small, before anything is computed, and the caller
calls again with bigger ones.

A program is int64 words, records one after another: an opcode, then its operands - register
numbers (r), or immediates (i):
    END                                   return OK
    ARRAY   r obj, r data, r dims, i rank read an ndarray's data pointer and dims (SHAPE_MISMATCH if
                                          its rank is another)
    EQ      r a, r b                      SHAPE_MISMATCH unless a == b
    BCAST   r dst, r a, r b               dst = a broadcast with b (SHAPE_MISMATCH if they do not)
    MUL/ADD/SUB/DIV/MAX r dst, r a, r b   arithmetic (DIV floors; SHAPE_MISMATCH on a zero divisor)
    MOV     r dst, r src
    ALLOC   r dst, r count, i bytes, i arena   dst = the offset of count * bytes bytes in the arena
    RESERVE                               NEED_MEMORY unless each arena holds what was ALLOCed
    BASE    r dst, i arena                dst += the arena's address (an ALLOCed offset: a pointer)
    ADDR    r dst, r ptr, r index, i bytes  dst = ptr + index * bytes
    KERNEL  r fn, r total, r ptrs, r meta   fn(0, total, &frame[ptrs], &frame[meta]): a kernel, a
                                          native loop (codegen and native/ share the signature)
    SPLIT   r fn, r total, r ptrs, r meta, r work   the same, across the pool's workers when work
                                          (elements, multiply-adds) reaches the header's SPLIT_MIN
    STRIDES r dst, i rank, r iter, r dims, i in_rank, r own   an input's element strides over the
                                          iteration dims iter, 0 where it broadcasts: its own strides
                                          (registers from own), or those of a contiguous array of
                                          dims where own is -1
    PROD    r dst, r base, i count        dst = the product of count registers from base
    COPY    r dst, r src, r bytes         memcpy
    ZERO    r dst, r bytes                memset to 0
    COPY2D  r dst, r dst_step, r src, r src_step, r rows, r bytes   rows rows of bytes bytes each, the
                                          rows step (in bytes) apart in dst and in src
    GATHER  r dst, r table, r rows, r indices, r count, r bytes   dst row i = table row indices[i] (int64),
                                          rows of bytes bytes (SHAPE_MISMATCH for an index outside [0, rows))
    STRIDED r dst, r src, i rank, r dims, r strides, i bytes   a contiguous copy of the view of src with
                                          rank dims and element strides (registers from dims, strides)
    JUMP    i target                      go on at word target
    JLT     r a, r b, i target            go on at word target if a < b
    GEMV_F32/F64 r fn, r k, r n, r a, r x, r y      y = x @ a, a contiguous (k, n): cblas_?gemv's
                                          64-bit interface, as numpy calls it
    GEMM_F32/F64 r fn, r m, r n, r k, r a, r b, r c c = a @ b, all contiguous: cblas_?gemm's
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .threads import KERNEL

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
NAME = "scriptc_run_program"

# Statuses
OK, NEED_MEMORY, SHAPE_MISMATCH = 0, 1, 3

# The frame's header: what the caller sets (arenas, the pool's workers) and reads back (NEED).
NEED = (0, 1)          # bytes each arena needs (scratch, out), set by the ALLOCs
BASE_ADDRESS = (2, 3)  # each arena's address
CAPACITY = (4, 5)      # each arena's size in bytes
BLOCKS, WORKERS, POOL_STATE, SPLIT_FUNCTION, SPLIT_MIN = 6, 7, 8, 9, 10
ZERO, ONE = 11, 12     # registers that hold 0 and 1
GENERATOR = 13         # the bitgen_t random fills draw from (native/random.py), set by the caller per call
HEADER = 16
SCRATCH, OUT = 0, 1    # arenas
ALIGNMENT = 64

OPCODES = ["END", "ARRAY", "EQ", "BCAST", "MUL", "ADD", "SUB", "DIV", "MAX", "MOV", "ALLOC", "RESERVE", "BASE",
           "ADDR", "KERNEL", "SPLIT", "STRIDES", "PROD", "COPY", "JUMP", "JLT", "GEMV_F32", "GEMV_F64", "GEMM_F32",
           "GEMM_F64", "ZERO", "COPY2D", "GATHER", "STRIDED"]
OPERANDS = {"END": 0, "ARRAY": 4, "EQ": 2, "BCAST": 3, "MUL": 3, "ADD": 3, "SUB": 3, "DIV": 3, "MAX": 3, "MOV": 2,
            "ALLOC": 4, "RESERVE": 0, "BASE": 2, "ADDR": 4, "KERNEL": 4, "SPLIT": 5, "STRIDES": 6, "PROD": 3,
            "COPY": 3, "JUMP": 1, "JLT": 3, "GEMV_F32": 6, "GEMV_F64": 6, "GEMM_F32": 7, "GEMM_F64": 7, "ZERO": 2,
            "COPY2D": 6, "GATHER": 6, "STRIDED": 6}
OP = {name: code for code, name in enumerate(OPCODES)}
# Where numpy's array struct keeps what ARRAY reads (checked against numpy by pointers.py).
ARRAY_DATA, ARRAY_NDIM, ARRAY_DIMS = 16, 24, 32
_ROW_MAJOR, _NO_TRANSPOSE, _TRANSPOSED = 101, 111, 112


def function() -> int:
    """The address of scriptc_run_program, compiled once per machine."""
    from .build import compiled

    return compiled("program", ("native/program", "native/threads", "codegen/llvm/loop"), module, [NAME])[NAME]


class _Emitter:
    """The interpreter's function: a loop over records, one block per opcode."""

    def __init__(self, module: ir.Module):
        self.module = module
        self.fn = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer(), I64.as_pointer()]), name=NAME)
        self.frame, self.program = self.fn.args
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        entry = self.b.block
        # Accumulators for records that loop (allocated once, here: an alloca in the loop would grow the stack).
        self.accumulator, self.offset, self.rest = (self.b.alloca(I64) for _ in range(3))
        self.head = self.fn.append_basic_block("record")
        self.b.branch(self.head)
        self.b.position_at_end(self.head)
        self.at = self.b.phi(I64, "at")
        self.at.add_incoming(ir.Constant(I64, 0), entry)

    def word(self, offset: int):
        b = self.b
        return b.load(b.gep(self.program, [b.add(self.at, ir.Constant(I64, offset))]))

    def slot(self, index):
        return self.b.gep(self.frame, [index])

    def reg(self, offset: int):
        """The value of the register the operand at `offset` names."""
        return self.b.load(self.slot(self.word(offset)))

    def set(self, offset: int, value) -> None:
        self.b.store(value, self.slot(self.word(offset)))

    def header(self, index: int):
        return self.b.load(self.slot(ir.Constant(I64, index)))

    def pointer(self, value, to: ir.Type):
        return self.b.inttoptr(value, to.as_pointer())

    def next(self, size: int) -> None:
        """Go on with the record after this one."""
        self.at.add_incoming(self.b.add(self.at, ir.Constant(I64, size + 1)), self.b.block)
        self.b.branch(self.head)

    def jump(self, target) -> None:
        self.at.add_incoming(target, self.b.block)
        self.b.branch(self.head)

    def fail(self, status: int) -> None:
        self.b.ret(ir.Constant(I64, status))

    def count(self, n, body, label: str) -> None:
        """for i in [0, n): body(i)."""
        loop(self.b, ir.Constant(I64, 0), n, body, label)

    def check(self, ok, status: int) -> None:
        """Return `status` unless `ok`."""
        b = self.b
        bad, good = self.fn.append_basic_block("bad"), self.fn.append_basic_block("good")
        b.cbranch(ok, good, bad)
        b.position_at_end(bad)
        self.fail(status)
        b.position_at_end(good)

    def call_kernel(self, fn, total, ptrs, meta) -> None:
        b = self.b
        b.call(self.pointer(fn, KERNEL), [ir.Constant(I64, 0), total, b.bitcast(self.slot(ptrs), I8.as_pointer()
                                                                                .as_pointer()), self.slot(meta)])


def _records(e: _Emitter) -> dict:
    """The body of each opcode (positioned in its block; each ends by going on or returning)."""
    b = e.b

    def end():
        e.fail(OK)

    def array():
        obj = b.inttoptr(e.reg(1), I8.as_pointer())
        ndim = b.load(b.bitcast(b.gep(obj, [ir.Constant(I64, ARRAY_NDIM)]), I32.as_pointer()))
        rank = e.word(4)
        e.check(b.icmp_signed("==", b.sext(ndim, I64), rank), SHAPE_MISMATCH)
        e.set(2, b.load(b.bitcast(b.gep(obj, [ir.Constant(I64, ARRAY_DATA)]), I64.as_pointer())))
        dims = b.inttoptr(b.load(b.bitcast(b.gep(obj, [ir.Constant(I64, ARRAY_DIMS)]), I64.as_pointer())),
                          I64.as_pointer())
        first = e.word(3)
        e.count(rank, lambda i: b.store(b.load(b.gep(dims, [i])), e.slot(b.add(first, i))), "dim")
        e.next(4)

    def eq():
        e.check(b.icmp_signed("==", e.reg(1), e.reg(2)), SHAPE_MISMATCH)
        e.next(2)

    def bcast():
        x, y = e.reg(2), e.reg(3)
        one = ir.Constant(I64, 1)
        e.check(b.or_(b.icmp_signed("==", x, y), b.or_(b.icmp_signed("==", x, one), b.icmp_signed("==", y, one))),
                SHAPE_MISMATCH)
        e.set(1, b.select(b.icmp_signed("==", x, one), y, x))
        e.next(3)

    def arithmetic(compute):
        def record():
            e.set(1, compute(e.reg(2), e.reg(3)))
            e.next(3)
        return record

    def floor_divide(x, y):
        e.check(b.icmp_signed("!=", y, ir.Constant(I64, 0)), SHAPE_MISMATCH)
        quotient = b.sdiv(x, y)
        # Python's floor division: one less where the signs differ and it does not divide exactly.
        adjust = b.and_(b.icmp_signed("!=", b.srem(x, y), ir.Constant(I64, 0)),
                        b.icmp_signed("!=", b.icmp_signed("<", x, ir.Constant(I64, 0)),
                                      b.icmp_signed("<", y, ir.Constant(I64, 0))))
        return b.sub(quotient, b.zext(adjust, I64))

    def mov():
        e.set(1, e.reg(2))
        e.next(2)

    def alloc():
        need = e.slot(b.add(e.word(4), ir.Constant(I64, NEED[0])))
        offset = b.load(need)
        e.set(1, offset)
        size = b.mul(e.reg(2), e.word(3))
        rounded = b.and_(b.add(size, ir.Constant(I64, ALIGNMENT - 1)), ir.Constant(I64, -ALIGNMENT))
        b.store(b.add(offset, rounded), need)
        e.next(4)

    def reserve():
        fits = [b.icmp_signed("<=", e.header(NEED[k]), e.header(CAPACITY[k])) for k in (SCRATCH, OUT)]
        e.check(b.and_(*fits), NEED_MEMORY)
        e.next(0)

    def base():
        address = b.load(e.slot(b.add(e.word(2), ir.Constant(I64, BASE_ADDRESS[0]))))
        e.set(1, b.add(e.reg(1), address))
        e.next(2)

    def addr():
        e.set(1, b.add(e.reg(2), b.mul(e.reg(3), e.word(4))))
        e.next(4)

    def kernel():
        e.call_kernel(e.reg(1), e.reg(2), e.word(3), e.word(4))
        e.next(4)

    def split():
        splits = b.and_(b.icmp_signed(">=", e.reg(5), e.header(SPLIT_MIN)),
                        b.icmp_signed(">", e.header(WORKERS), ir.Constant(I64, 0)))
        with b.if_else(splits) as (across, alone):
            with across:
                signature = ir.FunctionType(VOID, [I8.as_pointer(), I64, I32.as_pointer(), I64, I64,
                                                   I8.as_pointer().as_pointer(), I64.as_pointer()])
                b.call(e.pointer(e.header(SPLIT_FUNCTION), signature),
                       [b.inttoptr(e.header(BLOCKS), I8.as_pointer()), e.header(WORKERS),
                        b.inttoptr(e.header(POOL_STATE), I32.as_pointer()), e.reg(1), e.reg(2),
                        b.bitcast(e.slot(e.word(3)), I8.as_pointer().as_pointer()), e.slot(e.word(4))])
            with alone:
                e.call_kernel(e.reg(1), e.reg(2), e.word(3), e.word(4))
        e.next(5)

    def strides():
        dst, rank, iteration, dims, in_rank, own = (e.word(k) for k in range(1, 7))
        step = e.accumulator
        b.store(ir.Constant(I64, 1), step)
        contiguous = b.icmp_signed("<", own, ir.Constant(I64, 0))

        def one(i):
            d = b.sub(b.sub(rank, ir.Constant(I64, 1)), i)      # from the last dim
            k = b.sub(d, b.sub(rank, in_rank))                   # the input's own dim (right-aligned)
            inside = b.icmp_signed(">=", k, ir.Constant(I64, 0))
            size = b.select(inside, b.load(e.slot(b.add(dims, b.select(inside, k, ir.Constant(I64, 0))))),
                            ir.Constant(I64, 1))
            spans = b.load(e.slot(b.add(iteration, d)))
            broadcast = b.and_(b.icmp_signed("==", size, ir.Constant(I64, 1)),
                               b.icmp_signed("!=", spans, ir.Constant(I64, 1)))
            current = b.load(step)
            mine = b.select(contiguous, current, b.load(e.slot(b.add(b.select(contiguous, ir.Constant(I64, 0), own),
                                                                         b.select(inside, k, ir.Constant(I64, 0))))))
            b.store(b.select(broadcast, ir.Constant(I64, 0), mine), e.slot(b.add(dst, d)))
            b.store(b.mul(current, size), step)
        e.count(rank, one, "stride")
        e.next(6)

    def prod():
        first, n = e.word(2), e.word(3)
        total = e.accumulator
        b.store(ir.Constant(I64, 1), total)
        e.count(n, lambda i: b.store(b.mul(b.load(total), b.load(e.slot(b.add(first, i)))), total), "prod")
        e.set(1, b.load(total))
        e.next(3)

    def copy():
        memcpy = e.module.declare_intrinsic("llvm.memcpy", [I8.as_pointer(), I8.as_pointer(), I64])
        b.call(memcpy, [b.inttoptr(e.reg(1), I8.as_pointer()), b.inttoptr(e.reg(2), I8.as_pointer()), e.reg(3),
                        ir.Constant(ir.IntType(1), 0)])
        e.next(3)

    def zero():
        memset = e.module.declare_intrinsic("llvm.memset", [I8.as_pointer(), I64])
        b.call(memset, [b.inttoptr(e.reg(1), I8.as_pointer()), ir.Constant(I8, 0), e.reg(2),
                        ir.Constant(ir.IntType(1), 0)])
        e.next(2)

    def copy_rows():
        memcpy = e.module.declare_intrinsic("llvm.memcpy", [I8.as_pointer(), I8.as_pointer(), I64])
        dst, dst_step, src, src_step, rows, size = (e.reg(k) for k in range(1, 7))

        def row(i):
            b.call(memcpy, [b.inttoptr(b.add(dst, b.mul(i, dst_step)), I8.as_pointer()),
                            b.inttoptr(b.add(src, b.mul(i, src_step)), I8.as_pointer()), size,
                            ir.Constant(ir.IntType(1), 0)])
        e.count(rows, row, "row")
        e.next(6)

    def gather():
        memcpy = e.module.declare_intrinsic("llvm.memcpy", [I8.as_pointer(), I8.as_pointer(), I64])
        dst, table, rows, indices, count, size = (e.reg(k) for k in range(1, 7))
        index_at = b.inttoptr(indices, I64.as_pointer())

        def row(i):
            index = b.load(b.gep(index_at, [i]))
            e.check(b.and_(b.icmp_signed(">=", index, ir.Constant(I64, 0)), b.icmp_signed("<", index, rows)),
                    SHAPE_MISMATCH)
            b.call(memcpy, [b.inttoptr(b.add(dst, b.mul(i, size)), I8.as_pointer()),
                            b.inttoptr(b.add(table, b.mul(index, size)), I8.as_pointer()), size,
                            ir.Constant(ir.IntType(1), 0)])
        e.count(count, row, "gather")
        e.next(6)

    def strided():
        dst, src = e.reg(1), e.reg(2)
        rank, dims, strides, size = e.word(3), e.word(4), e.word(5), e.word(6)
        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        last = b.sub(rank, one)
        inner = b.load(e.slot(b.add(dims, last)))
        inner_step = b.mul(b.load(e.slot(b.add(strides, last))), size)
        rows = e.accumulator
        b.store(one, rows)
        e.count(last, lambda d: b.store(b.mul(b.load(rows), b.load(e.slot(b.add(dims, d)))), rows), "rows")
        row_count = b.load(rows)
        copy = e.module.declare_intrinsic("llvm.memcpy", [I8.as_pointer(), I8.as_pointer(), I64])

        def row(r):
            # the row's source offset: r's digits in the outer dims, times their strides
            offset, rest = e.offset, e.rest
            b.store(zero, offset)
            b.store(r, rest)

            def digit(k):
                d = b.sub(b.sub(last, one), k)  # outer dims, last first
                n = b.load(e.slot(b.add(dims, d)))
                value = b.load(rest)
                b.store(b.add(b.load(offset), b.mul(b.srem(value, n), b.load(e.slot(b.add(strides, d))))), offset)
                b.store(b.sdiv(value, n), rest)
            e.count(last, digit, "digit")
            source = b.add(src, b.mul(b.load(offset), size))
            target = b.add(dst, b.mul(b.mul(r, inner), size))

            def element(j):
                b.call(copy, [b.inttoptr(b.add(target, b.mul(j, size)), I8.as_pointer()),
                              b.inttoptr(b.add(source, b.mul(j, inner_step)), I8.as_pointer()), size,
                              ir.Constant(ir.IntType(1), 0)])
            e.count(inner, element, "element")
        e.count(row_count, row, "row")
        e.next(6)

    def jump():
        e.jump(e.word(1))

    def jlt():
        taken, not_taken = e.fn.append_basic_block("taken"), e.fn.append_basic_block("not_taken")
        b.cbranch(b.icmp_signed("<", e.reg(1), e.reg(2)), taken, not_taken)
        b.position_at_end(taken)
        e.jump(e.word(3))
        b.position_at_end(not_taken)
        e.next(3)

    def gemv(real):
        def record():
            data = real.as_pointer()
            signature = ir.FunctionType(VOID, [I32, I32, I64, I64, real, data, I64, data, I64, real, data, I64])
            k, n = e.reg(2), e.reg(3)
            b.call(e.pointer(e.reg(1), signature),
                   [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _TRANSPOSED), k, n, ir.Constant(real, 1.0),
                    e.pointer(e.reg(4), real), n, e.pointer(e.reg(5), real), ir.Constant(I64, 1),
                    ir.Constant(real, 0.0), e.pointer(e.reg(6), real), ir.Constant(I64, 1)])
            e.next(6)
        return record

    def gemm(real):
        def record():
            data = real.as_pointer()
            signature = ir.FunctionType(VOID, [I32, I32, I32, I64, I64, I64, real, data, I64, data, I64, real, data,
                                               I64])
            m, n, k = e.reg(2), e.reg(3), e.reg(4)
            b.call(e.pointer(e.reg(1), signature),
                   [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _NO_TRANSPOSE), ir.Constant(I32, _NO_TRANSPOSE),
                    m, n, k, ir.Constant(real, 1.0), e.pointer(e.reg(5), real), k, e.pointer(e.reg(6), real), n,
                    ir.Constant(real, 0.0), e.pointer(e.reg(7), real), n])
            e.next(7)
        return record

    return {"END": end, "ARRAY": array, "EQ": eq, "BCAST": bcast, "MUL": arithmetic(b.mul),
            "ADD": arithmetic(b.add), "SUB": arithmetic(b.sub), "DIV": arithmetic(floor_divide),
            "MAX": arithmetic(lambda x, y: b.select(b.icmp_signed(">", x, y), x, y)), "MOV": mov, "ALLOC": alloc,
            "RESERVE": reserve, "BASE": base, "ADDR": addr, "KERNEL": kernel, "SPLIT": split, "STRIDES": strides,
            "PROD": prod, "COPY": copy, "JUMP": jump, "JLT": jlt, "GEMV_F32": gemv(ir.FloatType()),
            "GEMV_F64": gemv(ir.DoubleType()), "GEMM_F32": gemm(ir.FloatType()), "GEMM_F64": gemm(ir.DoubleType()),
            "ZERO": zero, "COPY2D": copy_rows, "GATHER": gather, "STRIDED": strided}


def module(triple: str) -> ir.Module:
    m = ir.Module(name=NAME)
    m.triple = triple
    e = _Emitter(m)
    unknown = e.fn.append_basic_block("unknown")
    switch = e.b.switch(e.word(0), unknown)
    for name, body in _records(e).items():
        block = e.fn.append_basic_block(name.lower())
        switch.add_case(ir.Constant(I64, OP[name]), block)
        e.b.position_at_end(block)
        body()
    e.b.position_at_end(unknown)
    e.fail(SHAPE_MISMATCH)  # (a word no builder writes)
    return m
