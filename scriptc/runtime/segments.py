"""Segments: a straight-line run of a plan's steps, run as one native program per call.

The executor groups consecutive steps that the program interpreter (native/program.py) can run -
compiled FusionGroups, matrix products, views and reshapes, sizes and the integer arithmetic on
them - into a SegmentStep. Its first call for an input signature (dtype and rank of each input)
runs the steps the usual way and then writes the segment down as a program (program_builder.py):
registers for every dim, so that one program serves every batch size and sequence length. Later
calls with that signature set the input registers and make one ctypes call; the results are views
of an arena the program fills, a new one when the caller still holds the last call's results (and
the very arrays of the last call when it holds none of them). Each thread has a frame and arenas of
its own; load makes a few ahead for small programs, so that a server's worker thread does not make
them at its first call.

A program refuses a call whose shapes break what it was built on (a new broadcast pattern, a
convolution's image size): the segment's steps run it instead, as they do a signature the program
cannot take (a group no kernel compiled for, a strided value a product reads). Where one node has no
lowering for a signature, the segment splits there for it: the nodes before and after become
segments of their own (which split again where they must), the node a step between them.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from operator import itemgetter

import numpy as np

from scriptc.ir.graph import walk
from scriptc.native import linear
from scriptc.native import program as native
from scriptc.native.heads import gemm_runs
from scriptc.native.loops import loop_function
from scriptc.native.pointers import ARRAY_STRUCT_KNOWN, data_pointer
from scriptc.native.random import bit_generator_address
from scriptc.ops.generator import default_generator

from .program_builder import NotNative, build

MAX_PROGRAMS = 8           # signatures per segment; past that, new ones run the steps
_RUN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_refcount = sys.getrefcount
_GROWTH = 1.25             # an arena that is too small grows to this many times what the call needs
# Out arenas a thread keeps: a call takes one the caller holds no result of. A loop that feeds each
# result to the next call (y = f(y)) holds one, so two alternate; beyond this many, the caller keeps
# results alive, and a call makes a fresh arena for its own.
OUT_ARENAS = 4
ARENA_SHAPES = 4  # result shapes an out arena keeps its views for (_OutArena)
_FIRST_ARENA_BYTES = 4096
SPARE_STATE_BYTES = 1 << 20  # arenas of a state made ahead for a new thread (Program.prepare_threads), at most


def native_programs() -> bool:
    """Whether this process can run segment programs (numpy's array struct as the interpreter reads it)."""
    return ARRAY_STRUCT_KNOWN


class _OutArena:
    """An out arena and the results the calls that filled it handed out (views of it), per shape: a
    call that finds them held by no one hands the same arrays out again for the same shapes, so that
    a steady call makes no array at all (each one costs microseconds right after a program has
    streamed a model's weights through the cache). Kept for ARENA_SHAPES shapes, so that a model
    called at a few batches - as load primes it - makes none at any of them (the MLP called at
    batches 1 and 2 in turn: 2-3 us less a call)."""

    __slots__ = ("memory", "start", "views", "count")

    def __init__(self, size: int):
        self.memory = np.empty(max(size, native.ALIGNMENT) + native.ALIGNMENT, dtype=np.uint8)
        self.start = data_pointer(self.memory)
        self.views: dict[tuple, list] = {}  # the registers views were made from (dims, addresses) -> them
        self.count = 0  # views kept, all shapes together

    def free(self) -> bool:
        """Whether no result of an earlier call is held: the memory's references are this object's,
        getrefcount's argument and one per kept view (its base), and each kept view's the list's, the
        loop's and the argument's. (A view no longer kept that the caller holds is a reference to the
        memory more.)"""
        if _refcount(self.memory) != 2 + self.count:
            return False
        for views in self.views.values():
            for view in views:
                if _refcount(view) != 3:
                    return False
        return True

    def keep(self, key: tuple, views: list) -> list:
        """`views`, kept as the results for the registers `key` (the oldest shapes dropped past
        ARENA_SHAPES)."""
        kept = self.views
        while len(kept) >= ARENA_SHAPES:
            self.count -= len(kept.pop(next(iter(kept))))
        kept[key] = views
        self.count += len(views)
        return views


class _ThreadState:
    """One thread's frame and arenas for one program: a copy of the program's first frame and arenas
    of its own, `scratch_bytes` and `out_bytes` big to start with."""

    def __init__(self, program: "Program", scratch_bytes: int = _FIRST_ARENA_BYTES,
                 out_bytes: int = _FIRST_ARENA_BYTES):
        self.frame = program.frame_type.from_buffer_copy(program.first_frame)
        self.c_address = ctypes.c_void_p(ctypes.addressof(self.frame))
        self.outs: list[_OutArena] = []  # the out arenas (OUT_ARENAS at most)
        self.out: _OutArena | None = None  # the one the frame points at
        self.scratch_arena(scratch_bytes)
        self.new_out(out_bytes)

    def arena_bytes(self) -> int:
        return self.scratch.size + sum(arena.memory.size for arena in self.outs)

    def scratch_arena(self, size: int) -> None:
        """A new scratch arena of `size` bytes (or more) for the frame to use."""
        self.scratch = np.empty(max(size, native.ALIGNMENT) + native.ALIGNMENT, dtype=np.uint8)
        self._point(native.SCRATCH, self.scratch, data_pointer(self.scratch))

    def new_out(self, size: int) -> _OutArena:
        """A new out arena of `size` bytes (or more) for the frame to use."""
        arena = _OutArena(size)
        if len(self.outs) < OUT_ARENAS:
            self.outs.append(arena)
        else:
            self.outs[-1] = arena  # (the one it replaces lives on in the caller's results)
        self.use_out(arena)
        return arena

    def grow(self, kind: int, size: int) -> None:
        """The arena the frame points at, replaced by one of `size` bytes or more."""
        if kind == native.SCRATCH:
            self.scratch_arena(size)
            return
        index = next(i for i, arena in enumerate(self.outs) if arena is self.out)
        self.outs[index] = _OutArena(size)
        self.use_out(self.outs[index])

    def use_out(self, arena: _OutArena) -> None:
        self.out = arena
        self._point(native.OUT, arena.memory, arena.start)

    def _point(self, kind: int, memory: np.ndarray, start: int) -> None:
        address = -(-start // native.ALIGNMENT) * native.ALIGNMENT
        self.frame[native.BASE_ADDRESS[kind]] = address
        self.frame[native.CAPACITY[kind]] = memory.size - (address - start)

    def free_out(self) -> _OutArena:
        """An out arena no result of an earlier call is held of, the frame pointed at it."""
        for arena in self.outs:
            if arena.free():
                self.use_out(arena)
                return arena
        return self.new_out(self.out.memory.size)


class Program:
    """A segment's program for one input signature: its words, its frame's initial registers, where
    its inputs go and where its outputs are found."""

    def __init__(self, built, run, pool):
        self.words = (ctypes.c_int64 * len(built.words))(*built.words)
        self.c_words = ctypes.c_void_p(ctypes.addressof(self.words))  # (ready ctypes values: no conversion per call)
        # What a thread's frame starts as: the registers the program was built with and the pool's
        # workers. Written here only: each thread copies it (one memcpy, where building a frame from
        # the template's Python ints cost 7-20 us on a thread's first call).
        self.frame_type = ctypes.c_int64 * len(built.template)
        self.first_frame = self.frame_type(*built.template)
        workers = pool.native_workers()
        if workers is not None:
            frame = self.first_frame
            frame[native.BLOCKS], frame[native.WORKERS], frame[native.POOL_STATE], frame[native.SPLIT_FUNCTION] = workers
        self.inputs = built.inputs      # per segment input: ("array" | "int", register) or ("items", registers)
        self.outputs = built.outputs    # per segment output: see program_builder.Output
        self.keep = built.keep          # constants whose addresses the frame holds
        self.draws = built.draws        # whether it fills from the default generator
        self._generator = (None, 0)     # the bit generator last drawn from, its bitgen_t's address
        # Outputs that are contiguous tensors in the out arena, or tuples or lists of them (most): the
        # (dims, dtype, pointer) of each tensor, the registers that say where they are, and how they nest.
        self.arena_outputs, self.arena_layout = _arena_outputs(self.outputs)
        # (itemgetter reads the registers in C: a comprehension over the ctypes frame costs 5x as much;
        # ZERO makes them two or more, so that it gives a tuple)
        self.arena_key = itemgetter(*[r for dims, _, pointer in self.arena_outputs or () for r in (*dims, pointer)],
                                    native.ZERO)
        # Per tensor, where its dims and its pointer sit in an arena key: a call at a shape no view was
        # made for yet makes them from the key it read (reading the registers again cost ~2 us more of
        # the ~10 us such a call spends in Python, right after the program streamed the weights through).
        self.arena_fields, at = [], 0
        for dims, dtype, _ in self.arena_outputs or ():
            self.arena_fields.append((at, at + len(dims), dtype))
            at += len(dims) + 1
        self.run = run
        self._local = threading.local()
        self._spares: list[_ThreadState] = []  # states made ahead for threads yet to call (prepare_threads)

    def __call__(self, values) -> list | None:
        """The segment's outputs for `values` (its inputs), or None when the program refuses them.

        This is most of a compiled call's Python work: it runs right after the program has streamed a
        model's weights through the cache, where every function and object it touches is a miss, so
        it makes few calls, and a steady call whose caller kept nothing makes no array (_OutArena)."""
        state = self._state(values)
        frame = state.frame
        out = state.out
        if not out.free():
            out = state.free_out()
        if self.draws:
            status = self._draw(state)
        else:
            status = self.run(state.c_address, self.c_words)
        if status == native.NEED_MEMORY:
            status = self._again(state)
            out = state.out
        if status != native.OK:
            return None
        if self.arena_layout is None:
            return [_result(output, frame, out.memory, out.start, values) for output in self.outputs]
        key = self.arena_key(frame)
        views = out.views.get(key)
        if views is None:
            start, memory = out.start, out.memory
            views = out.keep(key, [np.ndarray(key[first:pointer], dtype, memory, key[pointer] - start)
                                   for first, pointer, dtype in self.arena_fields])
        if self.arena_layout is _FLAT:
            return list(views)
        results, at = [], 0
        for kind, count in self.arena_layout:
            items = views[at:at + count]  # (a new list: the caller never holds out.views itself)
            results.append(items[0] if kind is None else tuple(items) if kind == "tuple" else items)
            at += count
        return results

    def _state(self, values) -> _ThreadState:
        """This thread's state, its frame's input registers set for `values`."""
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = self._new_state()
        frame = state.frame
        for (kind, register), value in zip(self.inputs, values):
            if kind == "array":
                frame[register] = id(value)
            elif kind == "int":
                frame[register] = value
            else:  # (a tuple of arrays: one register each)
                for item_register, item in zip(register, value):
                    frame[item_register] = id(item)
        return state

    def reserve(self, values, limit: int) -> int:
        """Grow this thread's arenas to what a call on `values` needs, and write them once so that
        their pages are mapped, without running the program: with no capacity it stops at RESERVE,
        after the shape arithmetic and before any kernel. Nothing grows when the arenas hold it
        already or it would take more than `limit` bytes. Returns the bytes grown."""
        state = self._state(values)
        frame = state.frame
        capacities = [frame[native.CAPACITY[kind]] for kind in (native.SCRATCH, native.OUT)]
        for kind in (native.SCRATCH, native.OUT):
            frame[native.CAPACITY[kind]] = -1
        try:
            status = self.run(state.c_address, self.c_words)
        finally:
            for kind, capacity in zip((native.SCRATCH, native.OUT), capacities):
                frame[native.CAPACITY[kind]] = capacity
        needs = [int(frame[native.NEED[kind]] * _GROWTH) for kind in (native.SCRATCH, native.OUT)]
        if status != native.NEED_MEMORY or sum(needs) > limit:
            return 0
        grown = 0
        for kind, need, capacity in zip((native.SCRATCH, native.OUT), needs, capacities):
            if frame[native.NEED[kind]] > capacity:
                state.grow(kind, need)
                (state.scratch if kind == native.SCRATCH else state.out.memory).fill(0)
                grown += need
        return grown

    def _new_state(self) -> _ThreadState:
        """A state for a thread's first call: one made ahead when there is one left (list.pop hands
        each to one thread only), else a new one."""
        try:
            return self._spares.pop()
        except IndexError:
            return _ThreadState(self)

    def prepare_threads(self, count: int) -> None:
        """Make states for `count` threads' first calls ahead, with arenas the size of this thread's,
        when those are small (SPARE_STATE_BYTES): a new thread's first call otherwise spent 35-60 us
        making its state (numpy's first allocations on that thread, mostly) on an MLP call of 75 us;
        a big model's call makes that noise, and its arenas would cost memory per spare. (Their
        memory is not written here: that evicted the weights priming left in cache, and the first
        call on the loading thread went 1.28x -> 1.36x the steady state, a new thread's no faster.)"""
        own = getattr(self._local, "state", None)
        if own is None or own.arena_bytes() > SPARE_STATE_BYTES:
            return
        scratch_bytes = own.frame[native.CAPACITY[native.SCRATCH]]
        out_bytes = own.frame[native.CAPACITY[native.OUT]]
        while len(self._spares) < count:
            state = _ThreadState(self, scratch_bytes, out_bytes)
            self._keep_views_like(own, state)
            self._spares.append(state)

    def _keep_views_like(self, own: _ThreadState, state: _ThreadState) -> None:
        """Give `state`'s out arena the results `own`'s keeps, at the same offsets in it: a new
        thread's first call at a shape the loading thread was called at then makes no array (making
        one cost ~12 us more there than on the loading thread)."""
        if self.arena_outputs is None:
            return
        pointers = [pointer for _, pointer, _ in self.arena_fields]
        shift = state.frame[native.BASE_ADDRESS[native.OUT]] - own.frame[native.BASE_ADDRESS[native.OUT]]
        out = state.out
        for key, views in own.out.views.items():
            moved = list(key)
            for at in pointers:
                moved[at] += shift
            out.keep(tuple(moved), [np.ndarray(view.shape, view.dtype, out.memory, moved[at] - out.start)
                                    for view, at in zip(views, pointers)])

    def _again(self, state: _ThreadState) -> int:
        """Grow the arenas the program asked more of and run it again."""
        frame = state.frame
        for kind in (native.SCRATCH, native.OUT):
            if frame[native.NEED[kind]] > frame[native.CAPACITY[kind]]:
                state.grow(kind, int(frame[native.NEED[kind]] * _GROWTH))
        return self._draw(state) if self.draws else self.run(state.c_address, self.c_words)

    def _draw(self, state: _ThreadState) -> int:
        """Run a program with random fills: from the default generator's stream as it is now, holding
        its lock as numpy's own samplers do (another thread may draw from it meanwhile)."""
        bits = default_generator.rng.bit_generator  # (manual_seed makes a new one)
        if self._generator[0] is not bits:
            self._generator = (bits, bit_generator_address(bits))
        state.frame[native.GENERATOR] = self._generator[1]
        with bits.lock:
            return self.run(state.c_address, self.c_words)


_FLAT = [(None, 1)]  # (an arena layout of one tensor per output: the common case, checked by identity)


def _arena_outputs(outputs: list) -> tuple[list | None, list | None]:
    """(dims, dtype, pointer) per tensor and the layout [(None | "tuple" | "list", how many tensors)]
    per output, when every output is a contiguous tensor in the out arena or a tuple or list of them;
    else (None, None)."""
    def in_arena(output) -> bool:
        return output.root is None and output.strides is None
    tensors, layout = [], []
    for output in outputs:
        if in_arena(output):
            tensors.append(output)
            layout.append((None, 1))
        elif output.root is not None and output.root[0] in ("tuple", "list") and all(map(in_arena, output.root[1])):
            tensors += output.root[1]
            layout.append((output.root[0], len(output.root[1])))
        else:
            return None, None
    if layout == [(None, 1)] * len(layout):
        layout = _FLAT
    return [(tuple(t.dims), t.dtype, t.pointer) for t in tensors], layout


def _result(output, frame, out: np.ndarray, base: int, values: list):
    """The value an Output describes, after a call."""
    root = output.root
    if root is None:  # in the out arena
        return np.ndarray(tuple([frame[r] for r in output.dims]), output.dtype, out, frame[output.pointer] - base,
                          _strides(output, frame))
    kind = root[0]
    if kind == "int":
        return frame[output.pointer]
    if kind in ("list", "tuple"):
        items = [_result(item, frame, out, base, values) for item in root[1]]
        return items if kind == "list" else tuple(items)
    shape, strides = tuple([frame[r] for r in output.dims]), _strides(output, frame)
    if kind == "input":  # a view of an input (or of an item of a tuple input)
        base = values[root[1]] if len(root) == 2 else values[root[1]][root[2]]
        return np.ndarray(shape, output.dtype, base, frame[output.pointer] - frame[output.data], strides)
    return np.ndarray(shape, output.dtype, root[1], frame[output.pointer] - data_pointer(root[1]), strides)


def _strides(output, frame) -> tuple | None:
    return None if output.strides is None else tuple([frame[r] * output.itemsize for r in output.strides])


class SegmentStep:
    """Steps of a plan run as one native program per input signature (the steps themselves when
    there is none)."""

    def __init__(self, executor, nodes: list, steps: list, in_slots: list[int], constant_slots: list[int],
                 out_slots: list[int]):
        self.executor = executor
        self.nodes, self.steps = nodes, steps
        self.in_slots, self.constant_slots, self.out_slots = in_slots, constant_slots, out_slots
        self.reason: str | None = None  # why the last signature tried got no program
        self.pool = executor.pool
        self.programs: dict[tuple, Program | None] = {}
        self.splits: dict[tuple, list] = {}  # signature -> the steps that run it, split at a node with no lowering
        self._build_lock = threading.Lock()
        self._run = _RUN(native.function())  # the interpreter: compiled (or read from disk) with the plan
        # So is the loop of a product by frozen weights, for each product whose dtype the graph says
        # (lowerings/kernels.py; scripted graphs' at their first call, as their groups' kernels).
        for dtype in {n.output.type.dtype for node in nodes for n in walk_node(node) if n.op == "matmul"}:
            if dtype is not None and dtype.name in linear.FUNCTIONS and gemm_runs():
                loop_function("linear", dtype.name)

    def _signature(self, values: list):
        """Per input its dtype and rank, or int (a tuple or list of arrays: theirs); None for a call no
        program takes: one with an input that is not contiguous (the program reads arrays as
        contiguous; the steps take any, and a product reads a transposed input without a copy)."""
        key = []
        for value in values:
            if type(value) is np.ndarray:
                if not value.flags.c_contiguous:
                    return None
                key.append((value.dtype, value.ndim))
            elif type(value) is int:
                key.append(int)
            elif type(value) in (tuple, list) and value and all(
                    type(v) is np.ndarray and v.flags.c_contiguous for v in value):
                key.append((type(value),) + tuple((v.dtype, v.ndim) for v in value))
            else:
                return None
        return tuple(key)

    def prepare_threads(self, count: int) -> None:
        """Make each program's state ahead for `count` threads' first calls (Program.prepare_threads)."""
        for program in list(self.programs.values()):
            if program is not None:
                program.prepare_threads(count)

    def run_steps(self, frame) -> None:
        for step in self.steps:
            step(frame)

    def reserve(self, values: list, limit: int) -> int:
        """Size this thread's arenas of the program for `values`' signature for a call on them
        (Program.reserve), when there is one; the bytes grown."""
        program = self.programs.get(self._signature(values))
        return program.reserve(values, limit) if program else 0

    def run_values(self, values: list) -> list | None:
        """The outputs for `values` (the inputs, in in_slots' order) from this signature's program, or
        None when there is none or it refuses them (the caller then calls the step with its frame)."""
        program = self.programs.get(self._signature(values))  # (None, the signature of no program, is no key)
        return program(values) if program else None

    def __call__(self, frame) -> None:
        values = [frame[s] for s in self.in_slots]
        key = self._signature(values)
        program = self.programs.get(key) if key is not None else None
        if program is not None:
            results = program(values)
            if results is not None:
                for slot, value in zip(self.out_slots, results):
                    frame[slot] = value
                return
        parts = self.splits.get(key)
        if parts is not None:
            for step in parts:
                step(frame)
            return
        self.run_steps(frame)
        if key is not None and key not in self.programs:
            self._learn(key, frame)

    def learn(self, frame) -> None:
        """After the steps ran a call (`frame`: its values), write down the program for its signature
        unless one was tried already."""
        key = self._signature([frame[s] for s in self.in_slots])
        if key is not None and key not in self.programs:
            self._learn(key, frame)

    def _learn(self, key: tuple, frame) -> None:
        """Write down the program for the signature of the call that just ran (`frame`: its values);
        where one node cannot be lowered, split the segment there (_split)."""
        with self._build_lock:
            if key in self.programs or len(self.programs) >= MAX_PROGRAMS:
                return
            try:
                built = build(self, frame)
            except NotNative as exc:
                self.reason = str(exc)
                built = None
                if exc.at is not None:
                    self.splits[key] = self._split(exc.at, frame)
            self.programs[key] = Program(built, self._run, self.pool) if built is not None else None

    def _split(self, at: int, frame) -> list:
        """The steps of this signature's calls when node `at` has no lowering: the nodes before it and
        those after it as segments of their own (which split again where they must), the node's own
        step between them. They learn their programs from the call that just ran."""
        executor = self.executor
        before = executor.segment(list(zip(self.nodes[:at], self.steps[:at]))) if at else []
        after = executor.segment(list(zip(self.nodes[at + 1:], self.steps[at + 1:]))) if at + 1 < len(self.nodes) else []
        parts = before + [self.steps[at]] + after
        for part in parts:
            if isinstance(part, SegmentStep):
                part.learn(frame)
        return parts


def walk_node(node):
    """The node, then every node of its blocks."""
    yield node
    for block in node.blocks:
        yield from walk(block)
