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
The pool's state, shared by every caller (`scriptc_split`'s `state` argument):
    i32 busy @0 (1 while some caller's split has the workers)    i32 kept_off @4 (the CPU the workers
    are kept off: KEEP_OFF_UNKNOWN until a split sets it, NO_PINNING where they are never pinned)
    i32 count @8 (workers started)    i64 pinned_at @16 (CLOCK_MONOTONIC ns of the last re-pinning)
    i32 tids @24 (the workers' thread ids, `count` of them)
A woken worker is placed on the CPU of the thread that woke it when the machine's other CPUs are
busy (traced: sched_wakeup's target_cpu was the caller's): after runtime.load it sat runnable there
while the caller ran every chunk itself, and first calls ran at one thread's speed (MobileNetV2 1.7x
the steady state at two threads). So a split keeps the workers off its caller's CPU: where
`sched_getcpu` (nanoseconds: glibc reads it from the thread's rseq area) is not `kept_off`, it sets
each worker's affinity to the caller's own mask without the caller's CPU - never a CPU outside the
caller's mask; a one-CPU mask leaves them where they are. That is a few system calls (2 us for one
worker here) when the caller has moved, at most once per REPIN_INTERVAL_NS: server threads on
several CPUs taking turns to split would otherwise re-pin the workers at every split.
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
_SYS_SETAFFINITY = {"x86_64": 203, "aarch64": 122}
_SYS_GETAFFINITY = {"x86_64": 204, "aarch64": 123}
KEPT_OFF_AT, COUNT_AT, PINNED_AT, TIDS_AT = 4, 8, 16, 24  # the pool state's fields (see above; busy at 0)
KEEP_OFF_UNKNOWN, NO_PINNING = -1, -2
MASK_WORDS = 128  # an affinity mask of up to 8192 CPUs, on the stack of the split that re-pins
REPIN_INTERVAL_NS = 2_000_000
_CLOCK_MONOTONIC = 1

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
        self.sched_getcpu = module.globals.get("sched_getcpu") or ir.Function(
            module, ir.FunctionType(I32, []), "sched_getcpu")
        self.clock_gettime = module.globals.get("clock_gettime") or ir.Function(
            module, ir.FunctionType(I32, [I32, I64.as_pointer()]), "clock_gettime")

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

    def system_call(self, numbers: dict, *arguments):
        return self.b.call(self.syscall, [ir.Constant(I64, numbers[platform.machine()])] + list(arguments))

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


def _keep_off(module: ir.Module) -> None:
    """scriptc_keep_off(state, cpu): every started worker's affinity set to the calling thread's mask
    without `cpu`, then `cpu` written to kept_off - unless they were re-pinned less than
    REPIN_INTERVAL_NS ago. Where that mask is `cpu` alone, the workers stay where they are (a user's
    one-CPU mask: no pinning); where it cannot be read, kept_off becomes NO_PINNING and they stay
    there for good."""
    fn = ir.Function(module, ir.FunctionType(VOID, [I8.as_pointer(), I32]), "scriptc_keep_off")
    state, cpu = fn.args
    h = _Builder(module, fn)
    b = h.b
    kept_off = h.field(state, KEPT_OFF_AT, I32)
    clock = b.alloca(ir.ArrayType(I64, 2))
    b.call(h.clock_gettime, [ir.Constant(I32, _CLOCK_MONOTONIC), b.bitcast(clock, I64.as_pointer())])
    seconds, nanoseconds = (b.load(b.gep(clock, [ir.Constant(I32, 0), ir.Constant(I32, k)])) for k in (0, 1))
    now = b.add(b.mul(seconds, ir.Constant(I64, 1_000_000_000)), nanoseconds)
    pinned_at = h.field(state, PINNED_AT, I64)
    recent = b.and_(b.icmp_signed("<", b.sub(now, h.load(pinned_at)), ir.Constant(I64, REPIN_INTERVAL_NS)),
                    b.icmp_signed("!=", h.load(kept_off), ir.Constant(I32, KEEP_OFF_UNKNOWN)))
    with b.if_then(recent):
        b.ret_void()
    h.store(now, pinned_at)
    mask = b.alloca(ir.ArrayType(I64, MASK_WORDS))
    words = b.bitcast(mask, I64.as_pointer())
    got = h.system_call(_SYS_GETAFFINITY, ir.Constant(I64, 0), ir.Constant(I64, MASK_WORDS * 8),
                        b.ptrtoint(mask, I64))
    read, unreadable = fn.append_basic_block("read"), fn.append_basic_block("unreadable")
    b.cbranch(b.icmp_signed(">", got, ir.Constant(I64, 0)), read, unreadable)
    b.position_at_end(unreadable)
    h.store(ir.Constant(I32, NO_PINNING), kept_off)
    b.ret_void()

    b.position_at_end(read)
    index = b.zext(b.lshr(cpu, ir.Constant(I32, 6)), I64)
    bit = b.shl(ir.Constant(I64, 1), b.zext(b.and_(cpu, ir.Constant(I32, 63)), I64))
    count = b.udiv(got, ir.Constant(I64, 8))
    others = b.alloca(I64)
    b.store(ir.Constant(I64, 0), others)

    def gather(i):
        word = b.load(b.gep(words, [i]))
        word = b.select(b.icmp_unsigned("==", i, index), b.and_(word, b.not_(bit)), word)
        b.store(b.or_(b.load(others), word), others)
    h.count(count, gather, "others")
    pin, alone = fn.append_basic_block("pin"), fn.append_basic_block("alone")
    b.cbranch(b.icmp_unsigned("!=", b.load(others), ir.Constant(I64, 0)), pin, alone)
    b.position_at_end(alone)  # (a one-CPU mask: the workers stay where they are)
    h.store(cpu, kept_off)
    b.ret_void()
    b.position_at_end(pin)
    with b.if_then(b.icmp_unsigned("<", index, count)):
        slot = b.gep(words, [index])
        b.store(b.and_(b.load(slot), b.not_(bit)), slot)
    tids = b.bitcast(b.gep(state, [ir.Constant(I64, TIDS_AT)]), I32.as_pointer())

    def set_affinity(i):
        tid = b.sext(b.load(b.gep(tids, [i])), I64)
        h.system_call(_SYS_SETAFFINITY, tid, got, b.ptrtoint(mask, I64))
    h.count(b.sext(h.load(h.field(state, COUNT_AT, I32), "acquire"), I64), set_affinity, "pin")
    h.store(cpu, kept_off)
    b.ret_void()


def _split(module: ir.Module) -> None:
    """scriptc_split(blocks, workers, state, kernel, total, ptrs, meta): the kernel over [0, total) in
    up to workers + 1 slices, when the workers are free - the pool state's busy flag taken by
    compare-and-swap, never waited for - else whole on this thread. The workers are moved off this
    thread's CPU first where they may be on it (scriptc_keep_off)."""
    signature = [I8.as_pointer(), I64, I32.as_pointer(), I64, I64, I8.as_pointer().as_pointer(), I64.as_pointer()]
    fn = ir.Function(module, ir.FunctionType(VOID, signature), "scriptc_split")
    blocks, workers, busy, kernel, total, ptrs, meta = fn.args  # (busy: the pool state, its busy flag first)
    h = _Builder(module, fn)
    b = h.b
    state = b.bitcast(busy, I8.as_pointer())
    parallel_for, keep_off = module.globals["scriptc_parallel_for"], module.globals["scriptc_keep_off"]
    whole, try_split, split, done = (fn.append_basic_block(n) for n in ("whole", "try_split", "split", "done"))
    used = b.select(b.icmp_signed("<", workers, b.sub(total, ir.Constant(I64, 1))), workers,
                    b.sub(total, ir.Constant(I64, 1)))
    b.cbranch(b.icmp_signed(">", used, ir.Constant(I64, 0)), try_split, whole)
    b.position_at_end(try_split)
    taken = b.extract_value(b.cmpxchg(busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic"), 1)
    b.cbranch(taken, split, whole)
    b.position_at_end(split)
    kept_off = h.load(h.field(state, KEPT_OFF_AT, I32), "monotonic")
    with b.if_then(b.icmp_signed("!=", kept_off, ir.Constant(I32, NO_PINNING))):
        cpu = b.call(h.sched_getcpu, [])
        moved = b.and_(b.icmp_signed("!=", cpu, kept_off), b.icmp_signed(">=", cpu, ir.Constant(I32, 0)))
        with b.if_then(moved, likely=False):
            b.call(keep_off, [state, cpu])
    b.call(parallel_for, [blocks, used, kernel, total, ptrs, meta])
    h.store(ir.Constant(I32, 0), busy, "release")
    b.branch(done)
    b.position_at_end(whole)
    h.call_kernel(kernel, ir.Constant(I64, 0), total, ptrs, meta)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


NAMES = ["scriptc_worker", "scriptc_parallel_for", "scriptc_keep_off", "scriptc_split"]


def functions() -> dict[str, int]:
    """The addresses of NAMES, compiled once per machine."""
    from .build import compiled

    return compiled("threads", ("native/threads", "codegen/llvm/loop"), module, NAMES)


def module(triple: str) -> ir.Module:
    """The module with four functions: scriptc_worker(block); scriptc_parallel_for(blocks, workers,
    kernel address, total, ptrs, meta), which splits [0, total) into workers + 1 slices;
    scriptc_keep_off (see _keep_off); and scriptc_split (see _split), what callers use."""
    m = ir.Module(name="scriptc_threads")
    m.triple = triple
    _worker(m)
    _parallel_for(m)
    _keep_off(m)
    _split(m)
    return m
