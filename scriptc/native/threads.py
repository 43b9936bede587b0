"""Native worker threads for the runtime's pool: a worker loop and a parallel-for, in LLVM IR.

Handing a kernel's slice to a Python thread (a queue, a condition variable, the GIL to wake up
with) costs ~60 us, so only kernels of a millisecond or more could be split. Here the hand-off
is a few memory writes: each worker runs `scriptc_worker(block)` through ctypes (the GIL stays
released for its whole life), spins ~50-100 us on its block's sequence word after each job (20-30 us
on the AMD EPYC measured here, whose pause is shorter), then sleeps in futex(2) until the next one.
`scriptc_parallel_for` posts slices, runs the first one itself, then helps with the others and spins
until the workers' parts are done.

Each worker's slice is cut into CHUNKS chunks, for a worker that is late. A worker asleep in futex
takes tens to hundreds of microseconds to wake on a virtual machine (27 us median here with both
cores busy), as long as a small model's slices take or longer. Once its own slice is done, the
caller takes the worker's chunks from the back, one at a time; a worker that slept since its last job
takes them from the front, one at a time too, so that whichever of the two is late, they share what
is left (before, the caller took a sleeping worker's slice whole and ran it alone, or a worker that
woke in time claimed all of it while the caller waited). A worker that wakes after the caller took
every chunk finds the job closed, and the caller never waits for it. A worker that was awake - as
in steady calls - takes its whole slice with one compare-and-swap (unless the caller has taken some
already) and runs it as one call, the same range as before: each core keeps to its part of the data
(its share of a layer's weights stays in its cache, a chain of kernels reads what the same core
wrote); sharing chunks in steady calls too cost the VAE and MobileNetV2 4-7% of their two-thread time.

A worker's block, 128 bytes (two cache lines, so two workers never share one):
    i32 seq @0 (bumped by the caller per job; the futex word)  i32 done @4 (seq of the last job run)
    i32 sleeping @8    i32 stop @12    i64 fn @16, start @24, end @32, ptrs @40, meta @48
    i32 taken @56 (seq of the last job the worker entered, or the caller closed; compare-and-swap)
    i64 chunks @64 (the chunks left: the next from the front in its low half, one past the last in
    its high half; compare-and-swap)    i64 chunk @72 (the indices a chunk spans, the last one fewer)
    i64 count @80 (how many chunks the slice has)
Linux x86-64 and aarch64 only (the futex syscall number); elsewhere the pool uses Python threads.
"""

from __future__ import annotations

import platform
import sys

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

BLOCK_BYTES = 128
DONE_AT, SLEEPING_AT = 4, 8  # the block fields the pool reads from Python (runtime/pool.py)
CHUNKS = 8               # chunks a worker's slice is cut into (see above)
SPIN_LIMIT = 1000        # pause instructions before a worker sleeps: ~50-100 us (Intel), 20-30 us (AMD EPYC)
YIELD_EVERY = 64         # a spinning worker yields its core this often (2-core machines share it with BLAS)
YIELD_AFTER = 4000       # pauses the caller spins on a slow worker before it yields its core
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
KERNEL = ir.FunctionType(VOID, [I64, I64, I8.as_pointer().as_pointer(), I64.as_pointer()])


def supported() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in _SYS_FUTEX


class _Builder:
    """Helpers over one function's IRBuilder: loops, atomics on block fields, futex, pause."""

    def __init__(self, module: ir.Module, fn: ir.Function):
        self.module, self.fn = module, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.syscall = module.globals.get("syscall") or ir.Function(
            module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.sched_yield = module.globals.get("sched_yield") or ir.Function(
            module, ir.FunctionType(I32, []), "sched_yield")

    def field(self, block, offset: int, type_):
        return self.b.bitcast(self.b.gep(block, [ir.Constant(I64, offset)]), type_.as_pointer())

    def load(self, ptr, ordering: str = "seq_cst"):
        return self.b.load_atomic(ptr, ordering, ptr.type.pointee.width // 8)

    def store(self, value, ptr, ordering: str = "seq_cst"):
        self.b.store_atomic(value, ptr, ordering, ptr.type.pointee.width // 8)

    def pause(self):
        if platform.machine() == "x86_64":
            pause = self.module.declare_intrinsic("llvm.x86.sse2.pause", [], ir.FunctionType(VOID, []))
            self.b.call(pause, [])

    def futex(self, word, op: int, value):
        self.b.call(self.syscall, [ir.Constant(I64, _SYS_FUTEX[platform.machine()]), self.b.ptrtoint(word, I64),
                                   ir.Constant(I64, op), self.b.zext(value, I64) if value.type == I32 else value,
                                   ir.Constant(I64, 0)])

    def count(self, n, body, label: str) -> None:
        """for i in [0, n): body(i) - which may branch, and ends in the block that goes on to i + 1."""
        loop(self.b, ir.Constant(I64, 0), n, body, label)

    def call_kernel(self, fn_address, start, end, ptrs, meta):
        self.b.call(self.b.inttoptr(fn_address, KERNEL.as_pointer()), [start, end, ptrs, meta])

    def claim(self, block, seq):
        """i1: whether this thread claimed job `seq` of the block (taken goes from seq - 1 to seq)."""
        b = self.b
        previous = b.sub(seq, ir.Constant(I32, 1))
        result = b.cmpxchg(self.field(block, 56, I32), previous, seq, "seq_cst", "seq_cst")
        return b.extract_value(result, 1)

    def job(self, block):
        """The posted job's kernel, start, end, chunk, ptrs and meta."""
        b = self.b
        kernel, start, end, chunk = (b.load(self.field(block, offset, I64)) for offset in (16, 24, 32, 72))
        ptrs = b.inttoptr(b.load(self.field(block, 40, I64)), I8.as_pointer().as_pointer())
        meta = b.inttoptr(b.load(self.field(block, 48, I64)), I64.as_pointer())
        return kernel, start, end, chunk, ptrs, meta

    def run_chunks(self, block, from_back: bool) -> None:
        """Take the block's chunks one at a time - from the front (the worker) or from the back (the
        caller) - and run each, until none is left."""
        b, fn = self.b, self.fn
        kernel, start, end, chunk, ptrs, meta = self.job(block)
        chunks = self.field(block, 64, I64)
        head, take, run, done = (fn.append_basic_block(n) for n in ("chunks", "take", "run", "chunks_done"))
        b.branch(head)
        b.position_at_end(head)
        left = self.load(chunks)
        front, back = b.and_(left, ir.Constant(I64, 0xFFFFFFFF)), b.lshr(left, ir.Constant(I64, 32))
        b.cbranch(b.icmp_unsigned("<", front, back), take, done)
        b.position_at_end(take)
        rest = b.sub(left, ir.Constant(I64, 1 << 32)) if from_back else b.add(left, ir.Constant(I64, 1))
        taken = b.extract_value(b.cmpxchg(chunks, left, rest, "seq_cst", "seq_cst"), 1)
        b.cbranch(taken, run, head)  # (the other thread took one meanwhile: look again)
        b.position_at_end(run)
        index = b.sub(back, ir.Constant(I64, 1)) if from_back else front
        first = b.add(start, b.mul(index, chunk))
        last = b.add(first, chunk)
        self.call_kernel(kernel, first, b.select(b.icmp_signed("<", last, end), last, end), ptrs, meta)
        b.branch(head)
        b.position_at_end(done)

    def run_slice(self, block, woke) -> None:
        """The worker's part of a job it entered: the whole slice as one call when it was awake for it
        and the caller has taken none of its chunks yet (one compare-and-swap takes them all), else
        the chunks left, shared with the caller (`woke`: it slept since its last job)."""
        b, fn = self.b, self.fn
        chunks = self.field(block, 64, I64)
        count = b.load(self.field(block, 80, I64))
        left = self.load(chunks)
        front = b.and_(left, ir.Constant(I64, 0xFFFFFFFF))
        untouched = b.and_(b.icmp_unsigned("==", b.lshr(left, ir.Constant(I64, 32)), count),
                           b.icmp_unsigned("<", front, count))
        untouched = b.and_(untouched, b.not_(woke))
        whole, take_all, shared, done = (fn.append_basic_block(n) for n in ("whole", "take_all", "shared", "slice_done"))
        b.cbranch(untouched, take_all, shared)
        b.position_at_end(take_all)
        all_taken = b.or_(b.shl(count, ir.Constant(I64, 32)), count)
        b.cbranch(b.extract_value(b.cmpxchg(chunks, left, all_taken, "seq_cst", "seq_cst"), 1), whole, shared)
        b.position_at_end(whole)
        kernel, start, end, chunk, ptrs, meta = self.job(block)
        self.call_kernel(kernel, b.add(start, b.mul(front, chunk)), end, ptrs, meta)
        b.branch(done)
        b.position_at_end(shared)
        self.run_chunks(block, from_back=False)
        b.branch(done)
        b.position_at_end(done)


def _worker(module: ir.Module) -> None:
    fn = ir.Function(module, ir.FunctionType(VOID, [I8.as_pointer()]), "scriptc_worker")
    h = _Builder(module, fn)
    b = h.b
    block = fn.args[0]
    seq, done = h.field(block, 0, I32), h.field(block, DONE_AT, I32)
    sleeping, stop = h.field(block, SLEEPING_AT, I32), h.field(block, 12, I32)
    entry = b.block
    wait, spin, sleep, job, leave = (fn.append_basic_block(n) for n in ("wait", "spin", "sleep", "job", "leave"))
    b.branch(wait)

    b.position_at_end(wait)  # last: the seq of the job this worker ran last; woke: whether it slept since
    last = b.phi(I32, "last")
    last.add_incoming(ir.Constant(I32, 0), entry)
    woke = b.phi(ir.IntType(1), "woke")
    woke.add_incoming(ir.Constant(ir.IntType(1), 0), entry)
    b.branch(spin)

    b.position_at_end(spin)
    spins = b.phi(I64, "spins")
    spins.add_incoming(ir.Constant(I64, 0), wait)
    posted = h.load(seq, "acquire")
    spin_more = fn.append_basic_block("spin_more")
    b.cbranch(b.icmp_unsigned("!=", posted, last), job, spin_more)
    b.position_at_end(spin_more)
    h.pause()
    next_spins = b.add(spins, ir.Constant(I64, 1))
    courtesy, spin_on = fn.append_basic_block("courtesy"), fn.append_basic_block("spin_on")
    b.cbranch(b.icmp_unsigned("==", b.and_(next_spins, ir.Constant(I64, YIELD_EVERY - 1)), ir.Constant(I64, 0)),
              courtesy, spin_on)
    b.position_at_end(courtesy)
    b.call(h.sched_yield, [])  # a BLAS thread waiting for this core gets it
    b.branch(spin_on)
    b.position_at_end(spin_on)
    spins.add_incoming(next_spins, spin_on)
    b.cbranch(b.icmp_unsigned("<", next_spins, ir.Constant(I64, SPIN_LIMIT)), spin, sleep)

    b.position_at_end(sleep)
    # Dekker with the caller: it stores seq then reads sleeping; we store sleeping then read seq
    # (both seq_cst), so a job posted meanwhile is either seen here or followed by a wake-up.
    h.store(ir.Constant(I32, 1), sleeping)
    recheck = h.load(seq)
    nap = fn.append_basic_block("nap")
    awake = fn.append_basic_block("awake")
    b.cbranch(b.icmp_unsigned("!=", recheck, last), awake, nap)
    b.position_at_end(nap)
    h.futex(seq, _FUTEX_WAIT_PRIVATE, last)  # returns at once if seq != last by now
    b.branch(awake)
    b.position_at_end(awake)
    h.store(ir.Constant(I32, 0), sleeping)
    last.add_incoming(last, awake)
    woke.add_incoming(ir.Constant(ir.IntType(1), 1), awake)
    b.branch(wait)

    b.position_at_end(job)
    run = fn.append_basic_block("run")
    b.cbranch(b.icmp_unsigned("!=", h.load(stop, "acquire"), ir.Constant(I32, 0)), leave, run)
    b.position_at_end(run)
    claimed, ran = fn.append_basic_block("claimed"), fn.append_basic_block("ran")
    b.cbranch(h.claim(block, posted), claimed, ran)  # not claimed: the caller took every chunk and closed it
    b.position_at_end(claimed)
    h.run_slice(block, woke)
    h.store(posted, done, "release")
    b.branch(ran)
    b.position_at_end(ran)
    last.add_incoming(posted, ran)
    woke.add_incoming(ir.Constant(ir.IntType(1), 0), ran)
    b.branch(wait)

    b.position_at_end(leave)
    b.ret_void()


def _parallel_for(module: ir.Module) -> None:
    signature = [I8.as_pointer(), I64, I64, I64, I8.as_pointer().as_pointer(), I64.as_pointer()]
    fn = ir.Function(module, ir.FunctionType(VOID, signature), "scriptc_parallel_for")
    blocks, workers, kernel, total, ptrs, meta = fn.args
    h = _Builder(module, fn)
    b = h.b
    parts = b.add(workers, ir.Constant(I64, 1))

    def bound(i):
        return b.udiv(b.mul(total, i), parts)

    def worker_block(i):
        return b.gep(blocks, [b.mul(i, ir.Constant(I64, BLOCK_BYTES))])

    def post(i):
        block = worker_block(i)
        slot = b.add(i, ir.Constant(I64, 1))
        values = (kernel, bound(slot), bound(b.add(slot, ir.Constant(I64, 1))), b.ptrtoint(ptrs, I64),
                  b.ptrtoint(meta, I64))
        for offset, value in zip((16, 24, 32, 40, 48), values):
            b.store(value, h.field(block, offset, I64))
        length = b.sub(values[2], values[1])
        chunk = b.udiv(b.add(length, ir.Constant(I64, CHUNKS - 1)), ir.Constant(I64, CHUNKS))
        chunk = b.select(b.icmp_unsigned(">", chunk, ir.Constant(I64, 0)), chunk, ir.Constant(I64, 1))
        count = b.udiv(b.add(length, b.sub(chunk, ir.Constant(I64, 1))), chunk)
        b.store(chunk, h.field(block, 72, I64))
        b.store(count, h.field(block, 80, I64))
        h.store(b.shl(count, ir.Constant(I64, 32)), h.field(block, 64, I64))
        seq = h.field(block, 0, I32)
        h.store(b.add(b.load(seq), ir.Constant(I32, 1)), seq)
        wake, posted = fn.append_basic_block("wake"), fn.append_basic_block("posted")
        b.cbranch(b.icmp_unsigned("!=", h.load(h.field(block, SLEEPING_AT, I32)), ir.Constant(I32, 0)), wake, posted)
        b.position_at_end(wake)
        h.futex(seq, _FUTEX_WAKE_PRIVATE, ir.Constant(I32, 1))
        b.branch(posted)
        b.position_at_end(posted)

    def join(j):
        block = worker_block(j)
        expected = b.load(h.field(block, 0, I32))
        wait, wait_more, keep_spinning, yield_block, joined = (fn.append_basic_block(n) for n in (
            "wait", "wait_more", "keep_spinning", "yield", "joined"))
        h.run_chunks(block, from_back=True)
        # Every chunk is taken: closing the job before the worker entered it means it never will
        # (it finds the job taken when it wakes); else wait for the chunks it took.
        b.cbranch(h.claim(block, expected), joined, wait)
        claim_block = b.block
        b.position_at_end(wait)
        spins = b.phi(I64, "spins")
        spins.add_incoming(ir.Constant(I64, 0), claim_block)
        b.cbranch(b.icmp_unsigned("==", h.load(h.field(block, DONE_AT, I32), "acquire"), expected), joined, wait_more)
        b.position_at_end(wait_more)
        h.pause()
        more = b.add(spins, ir.Constant(I64, 1))
        b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I64, YIELD_AFTER)), keep_spinning, yield_block)
        b.position_at_end(keep_spinning)
        spins.add_incoming(more, keep_spinning)
        b.branch(wait)
        b.position_at_end(yield_block)
        b.call(h.sched_yield, [])  # the worker may share our core: let it run
        spins.add_incoming(ir.Constant(I64, 0), yield_block)
        b.branch(wait)
        b.position_at_end(joined)

    h.count(workers, post, "post")
    h.call_kernel(kernel, ir.Constant(I64, 0), bound(ir.Constant(I64, 1)), ptrs, meta)
    h.count(workers, join, "join")
    b.ret_void()


def _split(module: ir.Module) -> None:
    """scriptc_split(blocks, workers, busy, kernel, total, ptrs, meta): the kernel over [0, total) in
    up to workers + 1 slices, when the workers are free - `busy` (an i32 the process's callers
    share) taken by compare-and-swap, never waited for - else whole on this thread."""
    signature = [I8.as_pointer(), I64, I32.as_pointer(), I64, I64, I8.as_pointer().as_pointer(), I64.as_pointer()]
    fn = ir.Function(module, ir.FunctionType(VOID, signature), "scriptc_split")
    blocks, workers, busy, kernel, total, ptrs, meta = fn.args
    h = _Builder(module, fn)
    b = h.b
    parallel_for = module.globals["scriptc_parallel_for"]
    whole, try_split, split, done = (fn.append_basic_block(n) for n in ("whole", "try_split", "split", "done"))
    used = b.select(b.icmp_signed("<", workers, b.sub(total, ir.Constant(I64, 1))), workers,
                    b.sub(total, ir.Constant(I64, 1)))
    b.cbranch(b.icmp_signed(">", used, ir.Constant(I64, 0)), try_split, whole)
    b.position_at_end(try_split)
    taken = b.extract_value(b.cmpxchg(busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic"), 1)
    b.cbranch(taken, split, whole)
    b.position_at_end(split)
    b.call(parallel_for, [blocks, used, kernel, total, ptrs, meta])
    h.store(ir.Constant(I32, 0), busy, "release")
    b.branch(done)
    b.position_at_end(whole)
    h.call_kernel(kernel, ir.Constant(I64, 0), total, ptrs, meta)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


NAMES = ["scriptc_worker", "scriptc_parallel_for", "scriptc_split"]


def functions() -> dict[str, int]:
    """The addresses of NAMES, compiled once per machine."""
    from .build import compiled

    return compiled("threads", ("native/threads", "codegen/llvm/loop"), module, NAMES)


def module(triple: str) -> ir.Module:
    """The module with three functions: scriptc_worker(block); scriptc_parallel_for(blocks, workers,
    kernel address, total, ptrs, meta), which splits [0, total) into workers + 1 slices; and
    scriptc_split (see _split), what callers use."""
    m = ir.Module(name="scriptc_threads")
    m.triple = triple
    _worker(m)
    _parallel_for(m)
    _split(m)
    return m
