"""The compiled executor: an optimized graph becomes a plan, built once, of bound steps over value slots.

Calling the plan walks no graph: each step is a closure that reads its input slots from the
call's frame (a list), runs a numpy kernel, a compiled FusionGroup (groups.py: ctypes, GIL
released) or a nested plan for If/Loop, and writes its output slots. A group whose inputs' types
are known is compiled when the plan is built; any other signature when a call first brings it (no
warm-up runs, no profiling). Consecutive steps a native program can run (segments.py) become one
SegmentStep, which runs them with one native call for any batch size once its first call wrote the
program down. Plans hold no per-call state, so one plan is safe to call from many threads at once.
The reference interpreter runs whatever is not compiled, through its public interface (run_node,
run_block).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from scriptc import ops
from scriptc.ir.graph import Block, Graph, Node
from scriptc.native.opaque import native_kernel
from scriptc.ops.execute import run_kernel
from scriptc.passes.analysis import written_later
from scriptc.types import ListType, TensorType

from .groups import GroupStep
from .lowerings import CHEAP, runs_natively
from .segments import SegmentStep, native_programs, walk_node
from .interpreter import Interpreter, run_guarded
from .memory import configure_allocator
from .pool import ThreadPool
from .script_traceback import script_error

class Executor:
    """Runs `graph` compiled: `Executor(graph)(inputs) -> outputs` (lists of runtime values)."""

    def __init__(self, graph: Graph, functions: dict | None = None, threads: int | None = None, jit: bool = True):
        configure_allocator()
        self.graph = graph
        self.functions = dict(functions or {})
        self.jit = jit
        self.pool = ThreadPool(threads if threads is not None else (os.cpu_count() or 1))
        self.interpreter = Interpreter(graph, self.functions)
        self.segments = jit and native_programs()
        self.slot_of: dict[int, int] = {}
        for v in graph.inputs:
            self._slot(v)
        self.input_slots = [self.slot_of[id(v)] for v in graph.inputs]
        self.group_steps: list[GroupStep] = []
        self.group_step_of: dict[int, GroupStep] = {}  # by id of the FusionGroup node
        self.segment_steps: list[SegmentStep] = []  # every one, the splits' and those inside blocks too
        self.constants: dict[int, Any] = {}
        self.steps = self._plan(graph.block)
        self.output_slots = [self._slot(v) for v in graph.outputs]
        # Constants (weights, mostly) sit in every call's frame from the start: SSA never rebinds a slot.
        self.frame_template: list[Any] = [None] * len(self.slot_of)
        for slot, value in self.constants.items():
            self.frame_template[slot] = value
        if self.group_steps and jit:
            self.pool.start_workers()
        # A plan that is one segment reading the inputs and giving the outputs in order: a call hands
        # them to its program directly.
        whole = self.steps[0] if len(self.steps) == 1 and isinstance(self.steps[0], SegmentStep) else None
        self.whole = whole if whole is not None and whole.in_slots == self.input_slots and \
            whole.out_slots == self.output_slots else None

    def _slot(self, value) -> int:
        key = id(value)
        if key not in self.slot_of:
            self.slot_of[key] = len(self.slot_of)
        return self.slot_of[key]

    @property
    def compiled_groups(self) -> int:
        """How many of the plan's FusionGroups have a compiled kernel (for some signature) by now."""
        return sum(1 for s in self.group_steps if s.compiled)

    def __call__(self, inputs: list) -> list:
        whole = self.whole
        try:
            if whole is not None:  # (a program takes no call with another count of inputs)
                results = whole.run_values(inputs)
                if results is not None:
                    return results
            if len(inputs) != len(self.input_slots):
                raise TypeError(f"{self.graph.name}() expects {len(self.input_slots)} inputs, got {len(inputs)}")
            frame = self.frame_template.copy()
            for slot, value in zip(self.input_slots, inputs):
                frame[slot] = value
            for step in self.steps:
                step(frame)
            return [frame[s] for s in self.output_slots]
        except IndexError as exc:  # (an op's IndexError: a RuntimeError in compiled code, as in TorchScript)
            raise script_error(exc) from None

    run = __call__

    def prepare_threads(self, count: int) -> None:
        """Make the segments' per-thread states ahead for the first calls of `count` new threads
        (segments.Program.prepare_threads): after priming, on the loading thread."""
        for step in list(self.segment_steps):
            step.prepare_threads(count)

    # --- plan building ----------------------------------------------------------------------------
    def _plan(self, block: Block) -> list[Callable]:
        steps: list[Callable] = []
        run: list[tuple[Node, Callable]] = []  # consecutive steps a segment program may run
        for node in block:
            if node.op == "prim::Constant":
                value = node.attrs["value"]
                if isinstance(value, np.ndarray) and not value.flags.writeable and written_later(node.output):
                    # a traced module's tensor the graph writes into (a KV cache): the loaded weights are
                    # read-only, so the model keeps its own copy, which its calls update as torch's would
                    value = value.copy()
                self.constants[self._slot(node.output)] = value
                continue
            step = self._step(node)
            if self.segments and runs_natively(node):
                run.append((node, step))
            else:
                steps += self.segment(run)
                run = []
                steps.append(step)
        return steps + self.segment(run)

    def segment(self, run: list) -> list[Callable]:
        """The steps of `run` as one SegmentStep, or as they are when there is nothing in it worth a
        program (only views and integer arithmetic)."""
        if all(inner.op in CHEAP or inner.op == "prim::Constant" for node, _ in run for inner in walk_node(node)):
            return [step for _, step in run]
        nodes = [node for node, _ in run]
        # (An If's blocks are part of the segment: their nodes read and define values too.)
        everything = [inner for node in nodes for inner in walk_node(node)]
        inside = {id(node) for node in everything}
        defined = {id(v) for node in everything for v in node.outputs} | {
            id(p) for node in everything for block in node.blocks for p in block.params}
        in_slots, constant_slots, out_slots = [], [], []
        for node in everything:
            for v in node.inputs:
                slot = self._slot(v)
                if id(v) in defined or slot in in_slots or slot in constant_slots:
                    continue
                (constant_slots if slot in self.constants else in_slots).append(slot)
        for node in nodes:
            for v in node.outputs:
                # (A block of a node inside returning it is a use inside; the graph's return is not.)
                if any(id(u.user if isinstance(u.user, Node) else u.user.owner_node) not in inside for u in v.uses):
                    out_slots.append(self._slot(v))
        step = SegmentStep(self, nodes, [step for _, step in run], in_slots, constant_slots, out_slots)
        self.segment_steps.append(step)
        return [step]

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
        if op == "prim::With":
            body_plan, exit_plan = self._plan(node.blocks[0]), self._plan(node.blocks[1])
            body_ret = [self._slot(v) for v in node.blocks[0].returns]

            def run_plan(plan, frame):
                for s in plan:
                    s(frame)

            def with_step(frame):
                run_guarded(lambda: run_plan(body_plan, frame), lambda: run_plan(exit_plan, frame))
                for o, r in zip(outs, body_ret):
                    frame[o] = frame[r]
            return with_step
        if op == "prim::FusionGroup":
            step = GroupStep(self, node, ins, outs)
            self.group_steps.append(step)
            self.group_step_of[id(node)] = step
            return step
        if op.startswith("prim::"):
            run_node = self.interpreter.run_node

            def prim_step(frame):
                env = {id(v): frame[s] for v, s in zip(node.inputs, ins)}
                for o, value in zip(outs, run_node(node, env)):
                    frame[o] = value
            return prim_step
        definition = ops.OPS[op]
        kernel = native_kernel(definition) if self.jit else definition.kernel
        many = len(outs) > 1
        tensor_out = not many and isinstance(node.outputs[0].type, TensorType)
        list_out = not many and isinstance(node.outputs[0].type, ListType)
        aux, inplace = definition.aux, definition.inplace_of is not None
        out = outs[0] if outs else None

        def op_step(frame):
            args = [frame[s] for s in ins]
            target = args[0] if inplace else None
            result = run_kernel(definition, np, args, kernel)
            if aux:
                result = result[0]
            if inplace:
                np.copyto(target, result, casting="same_kind")
                result = target
            if many:
                for o, r in zip(outs, result):
                    frame[o] = np.asarray(r) if type(r) is not np.ndarray else r
            elif out is not None:
                if tensor_out and not isinstance(result, np.ndarray):  # (a QuantizedArray stays one)
                    result = np.asarray(result)
                frame[out] = list(result) if list_out and isinstance(result, tuple) else result
        return op_step
