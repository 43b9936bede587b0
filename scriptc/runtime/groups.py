"""A FusionGroup in the executor's plan: its compiled kernels, one per input signature.

A kernel depends on its inputs' signature - per tensor input its dtype, rank and the dims where it
broadcasts (size 1 against a larger iteration dim), per scalar input its type - never on sizes. A
group whose inputs' types say all that (a traced graph's: its guard) has its kernel compiled with
the plan. Any other signature, and every one of a group without a guard (a scripted graph whose
tensors have no dtype or shape), is compiled when a call first brings it: the group's subgraph is
typed for it (dims as symbols, 1 where an input broadcasts) and built into a kernel spec. Kernels
come from the disk cache like any other, so a second process compiles nothing, and a new batch
size or sequence length keeps its signature and compiles nothing. A signature no kernel can take
(codegen/kernel.py's Unsupported) runs the group's subgraph with the reference interpreter.

Calling a group walks no graph: what a launch needs for one set of input shapes is worked out once
and looked up after that (_Launch).
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from scriptc import ops
from scriptc.codegen.kernel import KernelSpec, Unsupported, build_spec, merge_dims
from scriptc.ir.graph import Graph, Node, clone_node, walk
from scriptc.native.pointers import data_pointer
from scriptc.ops.execute import run_kernel
from scriptc.passes.fuse import guard_of
from scriptc.passes.shape_infer import shape_infer
from scriptc.types import DTYPES_BY_NAME, Bool, Float, Int, TensorType

PARALLEL_MIN_ELEMENTS = 1 << 16   # ~20 us of work: measured break-even of a native hand-off (runtime/pool.py)
MAX_LAUNCHES = 64                 # input shapes remembered per group; past that, launches are worked out per call
_UNPREPARED = object()
_SCALAR_TYPES = {bool: Bool, int: Int, float: Float}
_DTYPES_BY_NUMPY = {d.np: d for d in DTYPES_BY_NAME.values()}


@dataclass(frozen=True)
class _Launch:
    """What a kernel call needs for one set of input shapes, except the data pointers."""
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


def broadcast_shape(shapes: list[tuple]) -> tuple | None:
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


class GroupStep:
    """One FusionGroup of a plan: its kernels by signature (_Variant), or its unfused subgraph."""

    def __init__(self, executor, node: Node, ins: list[int], outs: list[int]):
        self.node = node
        self.ins, self.outs = ins, outs
        self.pool = executor.pool
        self.interpreter = executor.interpreter
        self.constants = {i: executor.constants[s] for i, s in enumerate(ins) if s in executor.constants}
        self.jit = executor.jit
        self.variants: list[_Variant] = []
        self.reason: str | None = None  # why the last signature tried got no kernel
        self._failed: set = set()       # signatures that got none
        self._launches: dict[tuple, tuple | None] = {}
        self._build_lock = threading.Lock()
        body = node.blocks[0]
        first = self.head_node = next((n for n in body if n.op != "prim::Constant"), None)
        self.head = ops.OPS.get(first.op) if first is not None else None
        if self.head is None or not self.head.fusion_head:
            self.head = self.head_node = None
        # The inputs only the head reads: they take no part in the iteration space.
        self.head_only = set()
        if self.head is not None:
            users = {id(p): [u.user for u in p.uses] for p in body.params}
            self.head_only = {i for i, p in enumerate(body.params)
                              if users[id(p)] and all(u is first for u in users[id(p)])}
        self.varying = [i for i in range(len(ins)) if i not in self.constants]
        self.single_varying = self.varying[0] if len(self.varying) == 1 else None
        guard = node.attrs.get("guard")
        if self.jit and guard is not None:
            self._add_variant(node, guard)  # the signature the graph's types give: compiled now

    # --- what tests and the chain read of the plan-time kernel ----------------------------------
    @property
    def compiled(self) -> bool:
        return bool(self.variants)

    @property
    def kernel(self):
        return self.variants[0].kernel if self.variants else None

    @property
    def spec(self) -> KernelSpec | None:
        return self.variants[0].spec if self.variants else None

    @property
    def fixed_reads(self) -> list:
        return self.variants[0].fixed_reads if self.variants else []

    # --- calls -----------------------------------------------------------------------------------
    def fallback(self, frame) -> None:
        body = self.node.blocks[0]
        env = {id(p): frame[s] for p, s in zip(body.params, self.ins)}
        for o, value in zip(self.outs, self.interpreter.run_block(body, env)):
            frame[o] = value

    def __call__(self, frame) -> None:
        if not self.jit:
            self.fallback(frame)
            return
        args = [frame[s] for s in self.ins]
        # Everything a launch needs but the data pointers follows from the inputs' shapes, dtypes and
        # kinds, so it is worked out once per set of them (a batch size, say) and looked up after that.
        if self.single_varying is not None:  # most groups (a layer's activation): a key without a list
            a = args[self.single_varying]
            key = (a.shape, a.dtype) if type(a) is np.ndarray else type(a)
        else:
            key = tuple([(a.shape, a.dtype) if type(a) is np.ndarray else type(a) for a in [args[i] for i in self.varying]])
        entry = self._launches.get(key, _UNPREPARED)
        if entry is _UNPREPARED:
            entry = self._prepare(args)
            if len(self._launches) < MAX_LAUNCHES:
                self._launches[key] = entry
        if entry is None:
            self.fallback(frame)
            return
        variant, launch = entry
        if variant.head is not None:
            head_out = run_kernel(variant.head, np, [args[p] if p is not None else c for p, c in variant.head_sources],
                                  variant.head_kernel)
            args.append(head_out if type(head_out) is np.ndarray else np.asarray(head_out))
        variant.finish(self, frame, launch, args)

    def _prepare(self, args: list):
        """(variant, launch) for inputs like `args`, compiling a variant for their signature if none
        fits; None when they need the unfused subgraph: a signature no kernel takes, shapes that do
        not broadcast or that the head refuses, or an empty amax/amin reduction (which raises as
        PyTorch does, from the reference)."""
        found = self._space(args)
        if found is None:
            return None
        full, shape = found
        variant = next((v for v in self.variants if v.fits(full, shape)), None)
        if variant is None:
            variant = self._compile_for(full, shape)
            if variant is None:
                return None
        launch = variant.prepare(full, shape)
        return None if launch is None else (variant, launch)

    def _space(self, args: list):
        """(args with a stand-in for the head's result, the iteration shape), or None when the
        shapes do not broadcast or the head refuses them."""
        full = list(args)
        if self.head is not None:
            head_out = self._head_result_like(args)
            if head_out is None:
                return None
            full.append(head_out)
        shape = broadcast_shape([a.shape for i, a in enumerate(full) if type(a) is np.ndarray and
                                 i not in self.head_only])
        # The kernel reads the head's result as spanning the whole iteration space: where the
        # elementwise part broadcasts it larger (a squeeze-excitation's [N, C, 1, 1] scale times the
        # [N, C, H, W] input, fused only because a scripted graph has no shapes), the reference runs.
        if shape is None or (self.head is not None and full[-1].shape != shape):
            return None
        return full, shape

    def variant_for(self, args: list):
        """(the compiled variant inputs like `args` run, the iteration shape), or None if none has
        their signature yet."""
        found = self._space(args)
        if found is None:
            return None
        full, shape = found
        variant = next((v for v in self.variants if v.fits(full, shape)), None)
        return None if variant is None else (variant, shape)

    def _head_result_like(self, args: list) -> np.ndarray | None:
        """An array of the shape and dtype the head's result will have for `args` (from the op's
        shape rule: nothing runs, nothing is allocated), or None when the rule refuses them."""
        positions = {id(p): i for i, p in enumerate(self.node.blocks[0].params)}
        metas = []
        for v in self.head_node.inputs:
            value = args[positions[id(v)]] if id(v) in positions else v.node.attrs["value"]
            if type(value) is np.ndarray:
                if value.dtype not in _DTYPES_BY_NUMPY:
                    return None
                value = TensorType(_DTYPES_BY_NUMPY[value.dtype], value.shape)
            metas.append(value)
        try:
            result = self.head.shape(*metas)
        except Exception:
            return None  # the reference raises the user's error
        if not isinstance(result, TensorType) or result.dtype is None or result.shape is None or \
                not all(type(d) is int for d in result.shape):
            return None
        return np.broadcast_to(np.empty((), result.dtype.np), result.shape)

    def _compile_for(self, args: list, shape: tuple):
        """A new variant for the signature of `args` (the head's result last, if any), or None."""
        signature = self._signature(args, shape)
        if signature is None or signature in self._failed:
            return None
        with self._build_lock:  # (two threads meeting a new signature compile it once)
            variant = next((v for v in self.variants if v.fits(args, shape)), None)
            if variant is not None or signature in self._failed:
                return variant
            try:
                typed = specialized_group(self.node, signature)
            except Exception as exc:  # a rule that cannot type these inputs: the reference decides
                self.reason = f"{type(exc).__name__}: {exc}"
                self._failed.add(signature)
                return None
            return self._add_variant(typed, guard_of(typed), signature)

    def _add_variant(self, node: Node, guard: list, signature=None):
        from scriptc.codegen.llvm.driver import compile_kernel

        try:
            spec = build_spec(node)
            kernel = compile_kernel(spec)
        except Unsupported as exc:
            self.reason = str(exc)
            self._failed.add(signature)
            return None
        variant = _Variant(self, node, spec, kernel, guard)
        self.variants = self.variants + [variant]  # (a new list: calls on other threads iterate the old one)
        return variant

    def _signature(self, args: list, shape: tuple):
        """(the iteration rank, per group input: ("scalar", IR type name); ("tensor", dtype name,
        dims) for an input the elementwise part reads, 1 where it broadcasts against `shape` and None
        elsewhere; ("head", dtype name, shape) for one only the head reads), or None for an argument
        no kernel takes. Only args[:len(self.ins)] are the group's inputs (a head's result follows)."""
        rank = len(shape)
        out = []
        for i, a in enumerate(args[:len(self.ins)]):
            if type(a) is not np.ndarray:
                scalar = _SCALAR_TYPES.get(type(a))
                if scalar is None:
                    return None
                out.append(("scalar", str(scalar)))
            elif i in self.head_only:
                out.append(("head", a.dtype.name, a.shape))
            else:
                offset = rank - a.ndim
                out.append(("tensor", a.dtype.name, tuple(1 if n == 1 and shape[offset + d] != 1 else None
                                                          for d, n in enumerate(a.shape))))
        return rank, tuple(out)


_SCALAR_IR_TYPES = {"int": Int, "float": Float, "bool": Bool}


def specialized_group(node: Node, signature: tuple) -> Node:
    """A copy of FusionGroup `node` whose inputs have the types `signature` gives (see
    GroupStep._signature), its body's types inferred from them: dims as symbols of the iteration
    dims they span (so that broadcasting lines them up), 1 where an input broadcasts; an input only
    the head reads has its sizes (no kernel depends on them)."""
    graph = Graph("group")
    mapping = {}
    rank, entries = signature
    for v, entry in zip(node.inputs, entries):
        if entry[0] == "scalar":
            t = _SCALAR_IR_TYPES[entry[1]]
        elif entry[0] == "head":
            t = TensorType(DTYPES_BY_NAME[entry[1]], entry[2], getattr(v.type, "device", "cpu"))
        else:
            dims = entry[2]
            t = TensorType(DTYPES_BY_NAME[entry[1]], tuple(1 if d == 1 else f"n{rank - len(dims) + k}"
                                                            for k, d in enumerate(dims)), getattr(v.type, "device", "cpu"))
        mapping[v] = graph.add_input(t, v.name)
    copy = clone_node(node, mapping)
    graph.block.append(copy)
    body = copy.blocks[0]
    for p, v in zip(body.params, copy.inputs):
        p.type = v.type
    for inner in walk(body):
        for out in inner.outputs:
            if isinstance(out.type, TensorType) and inner.op != "prim::Constant":
                out.type = TensorType()
    shape_infer(graph)
    copy.attrs["guard"] = guard_of(copy)
    return copy


class _ThreadState:
    """A variant's per-thread launch state: its pointer array and the output buffers it recycles."""

    def __init__(self, variant: "_Variant"):
        self.pointers = variant.pointer_array_type()  # inputs only a BLAS head reads stay null
        self.c_pointers = ctypes.c_void_p(ctypes.addressof(self.pointers))
        self.buffers: list[np.ndarray | None] = [None] * len(variant.out_dtypes)
        for i, value in variant.fixed_reads:
            self.pointers[i] = data_pointer(value)


class _Variant:
    """A group's compiled kernel for one signature (its guard), and how to launch it."""

    def __init__(self, step: GroupStep, node: Node, spec: KernelSpec, kernel, guard: list):
        self.spec, self.kernel = spec, kernel
        self.pool = step.pool
        self._per_thread = threading.local()
        self.head = ops.OPS[spec.head.op] if spec.head else None
        self.head_is_result = False
        used = spec.used_inputs
        # The guard of every input the kernel reads, the head's result included (dtype, rank, dims of
        # size 1; None for a scalar), and the dtype and rank of every input only the head reads.
        # (The head's result spans the whole iteration space: its rank is the arrays', before any merging.)
        merge = spec.notes.get("merge")
        head_rank = spec.rank + (merge[1] - merge[0] if merge else 0)
        guards = list(guard) + ([[spec.inputs[spec.head.result].dtype, head_rank, []]] if spec.head else [])
        self.checks = [(i, None if guards[i][0] == "scalar" else
                        (np.dtype(guards[i][0]), guards[i][1], frozenset(guards[i][2]))) for i in used]
        self.head_checks = [(i, np.dtype(guards[i][0]), guards[i][1]) for i in sorted(step.head_only)
                            if guards[i][0] != "scalar"]
        if spec.head:
            from scriptc.native.heads import head_kernel
            positions, consts = spec.head.inputs, spec.head.constants
            # The dtype the guard expects of the head's first input, for its backend pieces to compile now.
            first = positions[0] if positions else None
            dtype = guards[first][0] if first is not None else None
            # All a conv2d + ReLU (or ReLU6, clamp) group does after its head, the head's products do
            # as they store (native/heads.py): the head's result is the group's, and the group
            # launches no kernel.
            bounds = spec.head_bounds if self.head.head_floor and len(step.outs) == 1 else None
            self.head_is_result = bounds is not None
            self.head_kernel = head_kernel(self.head, self.pool.split, dtype, self.pool.size, self.pool.run_slices,
                                           *(bounds or ()))
            self.head_sources = list(zip(positions, consts))  # (input position or None, constant)
        # The iteration space comes from what the elementwise part reads (a BLAS head's inputs don't count).
        self.tensor_inputs = [i for i in used if spec.inputs[i].kind == "tensor"]
        self.out_dtypes = [np.dtype(spec.exprs[k][1]) for k in spec.outputs] if spec.tail is None else \
            [np.dtype(spec.exprs[spec.tail.value][1])]
        self.scalar_dtypes = {i: np.dtype(inp.dtype) for i, inp in enumerate(spec.inputs) if inp.kind == "scalar"}
        # Inputs that are constants of the graph (weights, biases) are the same arrays on every call:
        # their pointers are set once per thread, and they do not take part in the signature.
        self.fixed_reads = []  # (input, the array its pointer is set to)
        for i in used:
            if i not in step.constants:
                continue
            value = step.constants[i]
            if i in self.scalar_dtypes:
                self.fixed_reads.append((i, np.array(value, dtype=self.scalar_dtypes[i])))
            elif type(value) is np.ndarray and value.flags.c_contiguous:
                # (A strided constant stays per-call: a copy made here would miss in-place updates.)
                self.fixed_reads.append((i, value))
        fixed_read = {i for i, _ in self.fixed_reads}
        self.varying_reads = [i for i in used if i not in fixed_read]
        self.flat = spec.flat
        self._strided = None
        self.finishes = spec.notes.get("then") is not None  # a reduction the executor completes
        self.flat_meta = (ctypes.c_int64 * 1)(0)
        self.pointer_array_type = ctypes.c_void_p * (len(spec.inputs) + len(self.out_dtypes))
        self.bare_kernel = _BARE_KERNEL(kernel.address)
        self.holding_kernel = _HOLDING_KERNEL(kernel.address)

    def strided_kernel(self):
        """The kernel of this variant's spec iterating rows with strides (this one, unless it is flat):
        what reads inputs that are views of larger arrays in place."""
        if not self.flat:
            return self.kernel
        if self._strided is None:
            from scriptc.codegen.llvm.driver import compile_kernel
            spec = dataclasses.replace(self.spec, notes={**self.spec.notes, "strided": True})
            self._strided = compile_kernel(spec)
        return self._strided

    def fits(self, args: list, shape: tuple) -> bool:
        """Whether `args` (the head's result last) have this variant's signature: each input the
        kernel reads has its dtype and rank, is 1 where it broadcasts and spans `shape` elsewhere."""
        rank = len(shape)
        for i, check in self.checks:
            a = args[i]
            if check is None:
                if type(a) is np.ndarray:
                    return False
                continue
            dtype, ndim, ones = check
            if type(a) is not np.ndarray or a.dtype != dtype or a.ndim != ndim:
                return False
            offset = rank - ndim
            for d in range(ndim):
                size = a.shape[d]
                if d in ones:
                    if size != 1:
                        return False
                elif size != shape[offset + d]:
                    return False
        return all(type(args[i]) is np.ndarray and args[i].dtype == dtype and args[i].ndim == ndim
                   for i, dtype, ndim in self.head_checks)

    def _state(self) -> _ThreadState:
        state = getattr(self._per_thread, "state", None)
        if state is None:
            state = self._per_thread.state = _ThreadState(self)
        return state

    def prepare(self, args: list, shape: tuple) -> _Launch | None:
        """The launch for inputs like `args` (the head's output included), which fit this variant, or
        None for an empty amax/amin reduction (which raises as PyTorch does, from the reference)."""
        spec = self.spec
        merge = spec.notes.get("merge")
        rank = spec.rank + (merge[1] - merge[0] if merge else 0)  # the arrays' rank, before any merging
        if len(shape) != rank:
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
        work = math.prod(shape)
        if self.flat:
            meta, total = self.flat_meta, work
        else:
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

    def finish(self, step: GroupStep, frame, launch: _Launch, args: list) -> None:
        """Run the kernel on `args` (the head's result last) and write the group's outputs to the frame."""
        if self.head_is_result:
            frame[step.outs[0]] = args[-1]
            return
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
        for o, value in zip(step.outs, outputs):
            frame[o] = value


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
