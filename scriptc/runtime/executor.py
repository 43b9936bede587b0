"""The compiled executor: an optimized graph becomes a plan, built once, of bound steps over value slots.

Calling the plan walks no graph: each step is a closure that reads its input slots from the
call's frame (a list), runs a numpy kernel, a compiled FusionGroup kernel (ctypes, GIL released)
or a nested plan for If/Loop, and writes its output slots. FusionGroups are compiled when the plan
is built (no warm-up runs). A group whose guard does not match a call's inputs (dtype, rank,
broadcast dims) runs its unfused subgraph instead. Plans hold no per-call state, so one plan is
safe to call from many threads at once. A graph that is a straight chain of layers also runs its
batch-1 calls as one native program per thread (chain.py).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from scriptc import ops
from scriptc.codegen.kernel import merge_dims
from scriptc.native.pointers import data_pointer
from scriptc.ir.graph import Block, Graph, Node
from scriptc.ops.execute import run_kernel
from scriptc.types import TensorType

from .chain import Chain
from .interpreter import Interpreter
from .memory import configure_allocator
from .pool import ThreadPool

PARALLEL_MIN_ELEMENTS = 1 << 16   # ~20 us of work: measured break-even of a native hand-off (runtime/pool.py)
MAX_SIGNATURES = 64               # launches remembered per group; past that, new signatures are worked out per call
_UNPREPARED = object()


@dataclass(frozen=True)
class _Launch:
    """What a group's kernel call needs for one input signature, except the data pointers."""
    out_shape: tuple
    meta: Any           # ctypes int64 array: the iteration shape, then each tensor input's strides
    total: int          # the kernel's [0, total) range: elements (flat kernels) or rows
    empty: bool
    parallel: bool
    short: bool         # runs inline holding the GIL (_HOLDING_KERNEL)
    c_total: ctypes.c_int64   # total and meta's address as the bare kernel call takes them
    c_meta: ctypes.c_void_p


# The kernel's entry point called without argument conversion: a launch passes ready ctypes values
# (0.7 us a call, against 1.6 us through KERNEL_TYPE's pointer-typed prototype).
_BARE_KERNEL = ctypes.CFUNCTYPE(None)
# The same, keeping the GIL, for kernels shorter than a parallel split: when another thread is running
# Python (a server's event loop beside its model thread), a thread that gave the GIL up waits out that
# thread's switch interval (5 ms by default) to take it back - far longer than the kernel it ran.
_HOLDING_KERNEL = ctypes.PYFUNCTYPE(None)
_ZERO = ctypes.c_int64(0)
_refcount = sys.getrefcount


class _ThreadState:
    """A group's per-thread launch state: its pointer array and the output buffers it recycles."""

    def __init__(self, step: "_GroupStep"):
        self.pointers = step.pointer_array_type()  # inputs only a BLAS head reads stay null
        self.c_pointers = ctypes.c_void_p(ctypes.addressof(self.pointers))
        self.buffers: list[np.ndarray | None] = [None] * len(step.out_dtypes)
        for i, value in step.fixed_reads:
            self.pointers[i] = data_pointer(value)


class Executor:
    """Runs `graph` compiled: `Executor(graph)(inputs) -> outputs` (lists of runtime values)."""

    def __init__(self, graph: Graph, functions: dict | None = None, threads: int | None = None, jit: bool = True):
        configure_allocator()
        self.graph = graph
        self.functions = dict(functions or {})
        self.jit = jit
        self.pool = ThreadPool(threads if threads is not None else (os.cpu_count() or 1))
        self.interpreter = Interpreter(graph, self.functions)
        self.slot_of: dict[int, int] = {}
        for v in graph.inputs:
            self._slot(v)
        self.input_slots = [self.slot_of[id(v)] for v in graph.inputs]
        self.group_steps: list[_GroupStep] = []
        self.constants: dict[int, Any] = {}
        self.steps = self._plan(graph.block)
        self.output_slots = [self._slot(v) for v in graph.outputs]
        # Constants (weights, mostly) sit in every call's frame from the start: SSA never rebinds a slot.
        self.frame_template: list[Any] = [None] * len(self.slot_of)
        for slot, value in self.constants.items():
            self.frame_template[slot] = value
        self.chain = Chain.of(self) if jit else None
        if self.compiled_groups:
            self.pool.start_workers()

    def _slot(self, value) -> int:
        key = id(value)
        if key not in self.slot_of:
            self.slot_of[key] = len(self.slot_of)
        return self.slot_of[key]

    @property
    def compiled_groups(self) -> int:
        return sum(1 for s in self.group_steps if s.kernel is not None)

    def __call__(self, inputs: list) -> list:
        if len(inputs) != len(self.input_slots):
            raise TypeError(f"{self.graph.name}() expects {len(self.input_slots)} inputs, got {len(inputs)}")
        chain = self.chain
        if chain is not None:
            outputs = chain(inputs)
            if outputs is not None:
                return outputs
        frame = self.frame_template.copy()
        for slot, value in zip(self.input_slots, inputs):
            frame[slot] = value
        for step in self.steps:
            step(frame)
        if chain is not None:
            chain.learn(inputs, frame)
        return [frame[s] for s in self.output_slots]

    run = __call__

    # --- plan building ----------------------------------------------------------------------------
    def _plan(self, block: Block) -> list[Callable]:
        steps = []
        for node in block:
            if node.op == "prim::Constant":
                self.constants[self._slot(node.output)] = node.attrs["value"]
            else:
                steps.append(self._step(node))
        return steps

    def _step(self, node: Node) -> Callable:
        ins = [self._slot(v) for v in node.inputs]
        outs = [self._slot(v) for v in node.outputs]
        op = node.op
        if op == "prim::If":
            then_plan, else_plan = self._plan(node.blocks[0]), self._plan(node.blocks[1])
            then_ret = [self._slot(v) for v in node.blocks[0].returns]
            else_ret = [self._slot(v) for v in node.blocks[1].returns]
            cond = ins[0]

            def if_step(frame):
                plan, rets = (then_plan, then_ret) if frame[cond] else (else_plan, else_ret)
                for s in plan:
                    s(frame)
                for o, r in zip(outs, rets):
                    frame[o] = frame[r]
            return if_step
        if op == "prim::Loop":
            body = node.blocks[0]
            params = [self._slot(p) for p in body.params]
            plan = self._plan(body)
            rets = [self._slot(v) for v in body.returns]

            def loop_step(frame):
                max_trip, cond = int(frame[ins[0]]), bool(frame[ins[1]])
                carried = [frame[s] for s in ins[2:]]
                i = 0
                while i < max_trip and cond:
                    frame[params[0]] = i
                    for p, v in zip(params[1:], carried):
                        frame[p] = v
                    for s in plan:
                        s(frame)
                    cond = bool(frame[rets[0]])
                    carried = [frame[r] for r in rets[1:]]
                    i += 1
                for o, v in zip(outs, carried):
                    frame[o] = v
            return loop_step
        if op == "prim::FusionGroup":
            step = _GroupStep(self, node, ins, outs)
            self.group_steps.append(step)
            return step
        if op.startswith("prim::"):
            interpreter = self.interpreter
            prim = interpreter._prims[op]

            def prim_step(frame):
                env = {id(v): frame[s] for v, s in zip(node.inputs, ins)}
                for o, value in zip(outs, prim(node, env)):
                    frame[o] = value
            return prim_step
        definition = ops.OPS[op]
        many = len(outs) > 1
        tensor_out = not many and isinstance(node.outputs[0].type, TensorType)
        aux, inplace = definition.aux, definition.inplace_of is not None
        out = outs[0] if outs else None

        def op_step(frame):
            args = [frame[s] for s in ins]
            target = args[0] if inplace else None
            result = run_kernel(definition, np, args)
            if aux:
                result = result[0]
            if inplace:
                np.copyto(target, result, casting="same_kind")
                result = target
            if many:
                for o, r in zip(outs, result):
                    frame[o] = np.asarray(r) if type(r) is not np.ndarray else r
            elif out is not None:
                if tensor_out and type(result) is not np.ndarray:
                    result = np.asarray(result)
                frame[out] = list(result) if isinstance(result, tuple) else result
        return op_step


def _finish_reduction(spec, partial: np.ndarray) -> np.ndarray:
    """The rest of a reduction over dims that are not adjacent (kernel.py's notes["then"]): `partial`
    is the kernel's result, its own dims kept; numpy reduces the earlier dims, then, unless the op
    keeps dims, the kernel's go too."""
    dims, keepdim = spec.notes["then"]
    op = ops.OPS[spec.tail.op]
    result = op.kernel(np, partial, list(dims), keepdim, *[None] * (len(op.schema.args) - 3))
    if keepdim:
        return result
    first, last = spec.notes["merge"] or (spec.tail.dim, spec.tail.dim)
    first, last = first - len(dims), last - len(dims)  # where the kernel's dims are, the earlier ones gone
    return result.reshape(result.shape[:first] + result.shape[last + 1:])


def _broadcast(shapes: list[tuple]) -> tuple | None:
    """The shapes broadcast together, or None if they do not (np.broadcast_shapes takes 4 us: it builds arrays)."""
    rank = max(map(len, shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        offset = rank - len(shape)
        for d, n in enumerate(shape):
            current = out[offset + d]
            if n != current:
                if current == 1:
                    out[offset + d] = n
                elif n != 1:
                    return None
    return tuple(out)


def _guard_ok(guards: list, args: list, shape: tuple) -> bool:
    """Whether `args` are what the group was fused for; `guards` are _checked_guards' (dtype, rank, dims
    of size 1), or None for a scalar."""
    rank = len(shape)
    for g, a in zip(guards, args):
        if g is None:
            if isinstance(a, np.ndarray):
                return False
            continue
        if type(a) is not np.ndarray or a.dtype != g[0] or a.ndim != g[1]:
            return False
        ones = g[2]
        offset = rank - a.ndim
        for d in range(a.ndim):
            size = a.shape[d]
            if d in ones:
                if size != 1:
                    return False
            elif size != shape[offset + d]:
                return False
    return True


class _GroupStep:
    """One FusionGroup: a compiled kernel (guard-checked) or, failing that, its unfused subgraph."""

    def __init__(self, executor: Executor, node: Node, ins: list[int], outs: list[int]):
        self.node = node
        self.ins, self.outs = ins, outs
        self.guards = node.attrs.get("guard") or []
        self.pool = executor.pool
        self.interpreter = executor.interpreter
        self.kernel = None
        self.reason = None
        self._per_thread = threading.local()
        if executor.jit:
            from scriptc.codegen.kernel import Unsupported, build_spec
            from scriptc.codegen.llvm.driver import compile_kernel
            try:
                self.spec = build_spec(node)
                self.kernel = compile_kernel(self.spec)
            except Unsupported as exc:
                self.reason = str(exc)
        if self.kernel is not None:
            spec = self.spec
            self.head = ops.OPS[spec.head.op] if spec.head else None
            self.head_is_result = False
            if spec.head:
                from scriptc.native.heads import head_kernel
                positions, consts = spec.head.inputs, spec.head.constants
                # The dtype the guard expects of the head's first input, for its backend pieces to compile now.
                first = positions[0] if positions else None
                guarded = first is not None and first < len(self.guards)
                # All a conv2d + ReLU group does after its head, the head's products do as they store
                # (heads.py): the head's result is the group's, and the group launches no kernel.
                floor = spec.head_floor if self.head.head_floor and len(self.outs) == 1 else None
                self.head_is_result = floor is not None
                self.head_kernel = head_kernel(self.head, self.pool.split, self.guards[first][0] if guarded else None,
                                               self.pool.size, self.pool.run_slices, floor)
                self.head_sources = list(zip(positions, consts))  # (input position or None, constant)
            used = spec.used_inputs
            # The iteration space comes from what the elementwise part reads (a BLAS head's inputs don't count).
            self.tensor_inputs = [i for i in used if spec.inputs[i].kind == "tensor"]
            self.guarded = [i for i in used if i < len(self.guards)]
            # (A dtype compares in 0.1 us; its .name, a Python property, takes 4.)
            self.checked_guards = [None if self.guards[i][0] == "scalar" else
                                   (np.dtype(self.guards[i][0]), self.guards[i][1], frozenset(self.guards[i][2]))
                                   for i in self.guarded]
            # What the head reads and what it returns is guarded too, by dtype and rank (its shapes are
            # the head's to check): the kernel reads the head's result as the dtype it was compiled for.
            self.head_guards = []
            if spec.head:
                self.head_guards = [(i, np.dtype(self.guards[i][0]), self.guards[i][1]) for i in spec.head.inputs
                                    if i is not None and i < len(self.guards) and self.guards[i][0] != "scalar"]
                result = next(n for n in node.blocks[0] if n.op == spec.head.op).outputs[0].type
                self.head_guards.append((spec.head.result, result.dtype.np, len(result.shape)))
            self.out_dtypes = [np.dtype(spec.exprs[k][1]) for k in spec.outputs] if spec.tail is None else \
                [np.dtype(spec.exprs[spec.tail.value][1])]
            self.scalar_dtypes = {i: np.dtype(inp.dtype) for i, inp in enumerate(spec.inputs) if inp.kind == "scalar"}
            # Inputs that are constants of the graph (weights, biases) are the same arrays on every call:
            # their pointers are set once per thread, and they do not take part in the signature.
            fixed = {i: executor.constants[s] for i, s in enumerate(ins) if s in executor.constants}
            self.fixed_reads = []  # (input, the array its pointer is set to)
            for i in used:
                if i not in fixed:
                    continue
                value = fixed[i]
                if i in self.scalar_dtypes:
                    self.fixed_reads.append((i, np.array(value, dtype=self.scalar_dtypes[i])))
                elif type(value) is np.ndarray and value.flags.c_contiguous:
                    # (A strided constant stays per-call: a copy made here would miss in-place updates.)
                    self.fixed_reads.append((i, value))
            fixed_read = {i for i, _ in self.fixed_reads}
            self.varying = [i for i in range(len(ins)) if i not in fixed]
            self.single_varying = self.varying[0] if len(self.varying) == 1 else None
            self.varying_reads = [i for i in used if i not in fixed_read]
            self.flat = spec.flat
            self.finishes = spec.notes.get("then") is not None  # a reduction the executor completes
            self.flat_meta = (ctypes.c_int64 * 1)(0)
            self._launches: dict[tuple, _Launch | None] = {}
            self.pointer_array_type = ctypes.c_void_p * (len(spec.inputs) + len(self.out_dtypes))
            self.bare_kernel = _BARE_KERNEL(self.kernel.address)
            self.holding_kernel = _HOLDING_KERNEL(self.kernel.address)

    def _state(self) -> _ThreadState:
        state = getattr(self._per_thread, "state", None)
        if state is None:
            state = self._per_thread.state = _ThreadState(self)
        return state

    def fallback(self, frame) -> None:
        body = self.node.blocks[0]
        env = {id(p): frame[s] for p, s in zip(body.params, self.ins)}
        for o, value in zip(self.outs, self.interpreter._run_block(body, env)):
            frame[o] = value

    def __call__(self, frame) -> None:
        if self.kernel is None:
            self.fallback(frame)
            return
        args = [frame[s] for s in self.ins]
        # Everything a launch needs but the data pointers follows from the inputs' shapes, dtypes and
        # kinds, so it is worked out once per signature (a batch size, say) and looked up after that.
        if self.single_varying is not None:  # most groups (a layer's activation): a key without a list
            a = args[self.single_varying]
            key = (a.shape, a.dtype) if type(a) is np.ndarray else type(a)
        else:
            key = tuple([(a.shape, a.dtype) if type(a) is np.ndarray else type(a) for a in [args[i] for i in self.varying]])
        if self.head is not None:
            head_out = run_kernel(self.head, np, [args[p] if p is not None else c for p, c in self.head_sources],
                                  self.head_kernel)
            args.append(head_out if type(head_out) is np.ndarray else np.asarray(head_out))
        launch = self._launches.get(key, _UNPREPARED)
        if launch is _UNPREPARED:
            launch = self._prepare(args)
            if len(self._launches) < MAX_SIGNATURES:
                self._launches[key] = launch
        if launch is None:
            self.fallback(frame)
            return
        if self.head_is_result:
            frame[self.outs[0]] = args[-1]
            return
        self._launch(frame, launch, args)

    def _prepare(self, args: list) -> _Launch | None:
        """The launch for inputs like `args` (the head's output included), or None when they need the
        unfused subgraph: a guard miss, shapes that do not broadcast, or an empty amax/amin reduction
        (which raises as PyTorch does, from the reference)."""
        spec = self.spec
        tensors = [args[i] for i in self.tensor_inputs]
        shape = _broadcast([t.shape for t in tensors if isinstance(t, np.ndarray)])
        if shape is None:
            return None
        merge = spec.notes.get("merge")
        rank = spec.rank + (merge[1] - merge[0] if merge else 0)  # the arrays' rank, before any merging
        if len(shape) != rank or not _guard_ok(self.checked_guards, [args[i] for i in self.guarded], shape):
            return None
        for i, dtype, head_rank in self.head_guards:
            if type(args[i]) is not np.ndarray or args[i].dtype != dtype or args[i].ndim != head_rank:
                return None
        tail = spec.tail
        reduces = tail is not None and tail.form == ops.REDUCE
        reduced = range(merge[0], merge[1] + 1) if merge else [tail.dim if reduces else rank - 1]
        then = spec.notes.get("then")
        spans = list(reduced) + list(then[0] if then is not None else ())
        if reduces and tail.role.combine in ("max", "min") and shape and any(shape[d] == 0 for d in spans):
            return None
        out_shape = shape
        if reduces:
            out_shape = tuple(1 if d in reduced else n for d, n in enumerate(shape) if tail.keepdim or d not in reduced)
        if self.flat:
            meta, total, work = self.flat_meta, math.prod(shape), math.prod(shape)
        else:
            work = math.prod(shape)
            iteration = merge_dims(shape, merge)  # the kernel's iteration space
            values = list(iteration)
            for i, inp in enumerate(spec.inputs):
                if inp.kind != "tensor":
                    continue
                # The input's shape right-aligned to the arrays' rank, merged as the iteration dims are.
                own = merge_dims((1,) * (len(shape) - args[i].ndim) + args[i].shape, merge)
                strides = [0] * spec.rank
                step = 1
                for d in range(spec.rank - 1, -1, -1):
                    strides[d] = 0 if own[d] == 1 and iteration[d] != 1 else step
                    step *= own[d]
                values += strides
            meta = (ctypes.c_int64 * len(values))(*values)
            # The kernel's range is over rows: all dims but the last, and but the one a reduction spans.
            spanned = tail.dim if tail is not None and tail.form in (ops.REDUCE, ops.NORMALIZE) else None
            rows = [d for d in range(spec.rank - 1) if d != spanned]
            total = math.prod(iteration[d] for d in rows)
        empty = total == 0 or (work == 0 and tail is None)
        short = work < PARALLEL_MIN_ELEMENTS
        return _Launch(out_shape, meta, total, empty, not short and self.pool.size > 1, short,
                       ctypes.c_int64(total), ctypes.c_void_p(ctypes.addressof(meta)))

    def _launch(self, frame, launch: _Launch, args: list) -> None:
        state = self._state()
        pointers = state.pointers
        keep = []  # converted inputs, alive until the kernel returns
        scalar_dtypes = self.scalar_dtypes
        for i in self.varying_reads:
            a = args[i]
            if i in scalar_dtypes:
                a = np.array(a, dtype=scalar_dtypes[i])
                keep.append(a)
            elif not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)  # the launch's strides are those of a contiguous array
                keep.append(a)
            pointers[i] = data_pointer(a)
        buffers = state.buffers
        first_output = len(self.spec.inputs)
        shape = launch.out_shape
        outputs = []
        for j, dtype in enumerate(self.out_dtypes):
            # Last call's array when nothing else holds it any more (its memory is faulted in already).
            # 3 references: the list's, `previous` and getrefcount's argument; views keep their base
            # alive, so a result the caller still holds, directly or through a view, is never reused.
            previous = buffers[j]
            if previous is None or previous.shape != shape or _refcount(previous) != 3:
                previous = buffers[j] = np.empty(shape, dtype=dtype)
                pointers[first_output + j] = data_pointer(previous)
            outputs.append(previous)
        if launch.empty:
            pass  # nothing to compute; the outputs are empty
        elif launch.parallel:
            self.pool.split(self.kernel, launch.total, pointers, launch.meta)
        elif launch.short:
            self.holding_kernel(_ZERO, launch.c_total, state.c_pointers, launch.c_meta)
        else:
            self.bare_kernel(_ZERO, launch.c_total, state.c_pointers, launch.c_meta)
        if self.finishes:
            outputs = [_finish_reduction(self.spec, outputs[0])]
        for o, value in zip(self.outs, outputs):
            frame[o] = value
