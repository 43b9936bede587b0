"""The executor's batch-1 path for a graph that is a straight chain of layers: one native call.

Each layer of such a graph is a FusionGroup whose head is a matmul by a constant matrix (or no
head) and whose kernel reads the layer before it. At batch 1 the Python around each step (launch
lookups, argument lists, three ctypes calls) costs more than its kernel, so the first batch-1 call
of a thread, run the usual way, is also written down as a native program (native/chain.py):
numpy's own GEMV for each head, the group's compiled kernel for the rest, into buffers the program
owns. Later calls with that input shape set the input's address, check that the caller let go of
the last result (else the program writes a new array) and make one ctypes call.

Anything else - another batch size, a non-contiguous input, a graph with any other step - runs
the executor's usual plan.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from scriptc.native import chain as native_chain
from scriptc.native.blas import gemv_addresses
from scriptc.native.pointers import data_pointer
from scriptc.types import TensorType

from .groups import broadcast_shape

MAX_PROGRAMS = 4  # per thread: batch-1 inputs come in one or two shapes (a dtype each)
_CHAIN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # releases the GIL: BLAS runs for tens of microseconds
_refcount = sys.getrefcount
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class _Program:
    """One thread's program for one input signature, and the memory its words point into."""

    def __init__(self, words: list, keep: list, input_slots: list, output_slots: list, out: np.ndarray,
                 run: _CHAIN):
        self.words = (ctypes.c_int64 * len(words))(*words)
        self.address = ctypes.addressof(self.words)
        self.keep = keep                  # buffers, pointer arrays and launches the words point into
        self.input_slots = input_slots    # (array, index) that hold the input's address
        self.output_slots = output_slots  # (array, index) that hold the result's address
        self.out = out
        self.run = run

    def new_output(self) -> np.ndarray:
        self.out = np.empty_like(self.out)
        address = data_pointer(self.out)
        for array, index in self.output_slots:
            array[index] = address
        return self.out


class Chain:
    """An executor's batch-1 native path (see the module docstring), where its plan allows one."""

    def __init__(self, executor, steps: list, run: _CHAIN):
        self.executor = executor
        self.steps = steps
        self.run = run
        self._local = threading.local()

    @staticmethod
    def of(executor) -> "Chain | None":
        """The chain for an executor whose plan is a straight chain of layers, else None."""
        from .groups import GroupStep

        graph = executor.graph
        if len(graph.inputs) != 1 or len(graph.outputs) != 1 or not executor.steps:
            return None
        t = graph.inputs[0].type
        if not isinstance(t, TensorType) or t.shape is None or len(t.shape) != 2 or \
                t.dtype is None or t.dtype.name not in ("float32", "float64"):
            return None
        if not all(isinstance(s, GroupStep) and s.compiled and len(s.outs) == 1 for s in executor.steps):
            return None
        if executor.output_slots != executor.steps[-1].outs:
            return None
        steps = [(step, step.variants[0]) for step in executor.steps]  # (each group's plan-time kernel)
        known = {executor.input_slots[0]}  # slots the program has a pointer for when a step reads them
        for step, variant in steps:
            if variant.head is not None:
                positions = [p for p, _ in variant.head_sources]  # (matmul's inputs: the group's, or None)
                if variant.head.name != "matmul" or len(positions) != 2 or None in positions or \
                        step.ins[positions[0]] not in known or \
                        not _constant_matrix(executor.constants.get(step.ins[positions[1]]), t.dtype.name):
                    return None
            head_input = variant.spec.head.result if variant.head is not None else None
            for i in variant.varying_reads:
                if i != head_input and (i in variant.scalar_dtypes or step.ins[i] not in known):
                    return None
            known.add(step.outs[0])
        if gemv_addresses() is None:
            return None
        return Chain(executor, steps, _CHAIN(native_chain.function()))  # compiled (or read from disk) with the plan

    def _programs(self) -> dict:
        programs = getattr(self._local, "programs", None)
        if programs is None:
            programs = self._local.programs = {}
        return programs

    def __call__(self, inputs: list) -> list | None:
        """The outputs, from this thread's program for the input's signature; None when there is none
        (the caller runs the usual plan, then `learn`s from it)."""
        x = inputs[0]
        if type(x) is not np.ndarray:
            return None
        program = self._programs().get((x.shape, x.dtype))
        if not program or not x.flags.c_contiguous:  # (False: a signature the chain cannot run)
            return None
        address = data_pointer(x)
        for array, index in program.input_slots:
            array[index] = address
        out = program.out
        # 3 references: the program's, `out` and getrefcount's argument (as the executor's buffers).
        if _refcount(out) != 3:
            out = program.new_output()
        program.run(program.address)
        return [out]

    def learn(self, inputs: list, frame: list) -> None:
        """Write down the program for a batch-1 call the usual plan just ran (`frame`: its values)."""
        x = inputs[0]
        if type(x) is not np.ndarray or x.ndim != 2 or x.shape[0] != 1 or x.dtype not in _FLOATS or \
                not x.flags.c_contiguous:
            return
        programs = self._programs()
        key = (x.shape, x.dtype)
        if key not in programs and len(programs) < MAX_PROGRAMS:
            programs[key] = self._build(x, frame) or False

    def _build(self, x: np.ndarray, frame: list) -> _Program | None:
        executor = self.executor
        gemv = gemv_addresses()[x.dtype.name]
        words: list[int] = []
        keep: list = []
        buffers = {executor.input_slots[0]: x}
        input_slots, output_slots = [], []
        words_slots = []  # word indices that hold the input's address (the words array does not exist yet)
        out = None
        for step, variant in self.steps:
            args = [frame[s] for s in step.ins]
            head_input = None
            if variant.head is not None:
                (a, _), (b, _) = variant.head_sources
                matrix = executor.constants[step.ins[b]]
                source = buffers[step.ins[a]]
                if source.shape != (1, matrix.shape[0]) or source.dtype != matrix.dtype:
                    return None
                head_out = np.empty((1, matrix.shape[1]), dtype=x.dtype)
                if source is x:
                    words_slots.append(len(words) + 5)
                kind = native_chain.GEMV_F32 if x.dtype == np.float32 else native_chain.GEMV_F64
                words += [kind, gemv, matrix.shape[0], matrix.shape[1],
                          data_pointer(matrix), data_pointer(source), data_pointer(head_out)]
                keep.append(head_out)
                args.append(head_out)
                head_input = variant.spec.head.result
            shape = broadcast_shape([args[i].shape for i in variant.tensor_inputs])
            launch = variant.prepare(args, shape) if shape is not None and variant.fits(args, shape) else None
            if launch is None or launch.empty or launch.parallel:
                return None
            pointers = variant.pointer_array_type()
            for i, value in variant.fixed_reads:
                pointers[i] = data_pointer(value)
            for i in variant.varying_reads:
                if i == head_input:
                    pointers[i] = data_pointer(args[-1])
                    continue
                source = buffers[step.ins[i]]
                if source.shape != args[i].shape:
                    return None
                pointers[i] = data_pointer(source)
                if source is x:
                    input_slots.append((pointers, i))
            out = np.empty(launch.out_shape, dtype=variant.out_dtypes[0])
            first_output = len(variant.spec.inputs)
            pointers[first_output] = data_pointer(out)
            if step is self.steps[-1][0]:
                output_slots.append((pointers, first_output))  # the result: held by the program alone
            else:
                keep.append(out)
            buffers[step.outs[0]] = out
            keep += [pointers, launch]
            words += [native_chain.KERNEL_RECORD, variant.kernel.address, launch.total, ctypes.addressof(pointers),
                      ctypes.addressof(launch.meta)]
        words.append(native_chain.END)
        program = _Program(words, keep, input_slots, output_slots, out, self.run)
        program.input_slots += [(program.words, i) for i in words_slots]
        return program


def _constant_matrix(value, dtype: str) -> bool:
    return type(value) is np.ndarray and value.ndim == 2 and value.dtype.name == dtype and value.flags.c_contiguous
