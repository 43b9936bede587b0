"""Writes a segment of a plan down as a program for the interpreter in native/program.py.

The builder walks the segment's nodes once, with the values its steps computed on the call that
just ran (which say dtypes and ranks, and which kernel of each group that call used), and keeps a
symbolic value per IR value: a tensor is registers for its dims (and strides, for a view into a
larger buffer), a register for its data pointer and the buffer it lives in; an int is a register
or a constant. Shapes are never written in: every dim comes from the inputs' dims at run time.
What the program cannot do raises NotNative, and the segment keeps running its steps.

LOWERINGS (lowerings/) holds the native implementation of each op the interpreter runs (views, sizes,
integer arithmetic, products, convolutions); a FusionGroup runs its compiled kernel (groups.py) for the variant
the recorded call used.
"""

from __future__ import annotations

from scriptc.native import program as native

from . import depth_first
from .convolution_lowering import plan_padded_planes
from .lowerings import LOWERINGS, lower_group, raises
from .lowerings.lists import appended_lists
from .lowerings.scalars import require
from .program_memory import allocation_records, mark_lifetimes, plan_concatenations, share
from .program_values import (Accumulator, Built, Builder, BuiltList, Condition, IntValue, NotNative, Output, TensorValue, dense,
                             int_register, tensor_of, value_of)


# Records of phase two that may refuse a call (an index out of range, a zero divisor in a loop).
_CHECKS_AS_IT_RUNS = ("GATHER", "DIV")


def build(segment, frame: list) -> Built:
    """The program of `segment` (a SegmentStep) for the signature of the call whose values `frame`
    holds; NotNative when it has something the interpreter cannot run."""
    executor = segment.executor
    slot_of = executor.slot_of
    builder = Builder()
    builder.slices = executor.pool.size
    inputs: list[tuple] = []
    syms: dict[int, object] = {}
    for slot in segment.constant_slots:
        syms[slot] = value_of(builder, executor.constants[slot], inputs, None)
    for k, slot in enumerate(segment.in_slots):
        syms[slot] = value_of(builder, frame[slot], inputs, k)
    builder.destinations, builder.concatenations = plan_concatenations(segment.nodes, slot_of, frame,
                                                                       segment.out_slots)
    builder.destinations.update(plan_padded_planes(segment.nodes, slot_of, frame, segment.out_slots))
    try:
        recorded = _Recorded(frame, slot_of)
        chains = depth_first.chains(segment.nodes, executor, recorded, segment.out_slots, builder.destinations)
        _lower_nodes(builder, segment.nodes, syms, executor, recorded, top=True, chains=chains)
    except NotNative as exc:
        exc.at = builder.position
        raise
    outputs = [_output(builder, syms[slot], syms, segment) for slot in segment.out_slots]
    if builder.draws and any(record[0] in _CHECKS_AS_IT_RUNS for record in builder.compute):
        # (its steps would run the call again and draw again: the stream would not be eager's)
        raise NotNative("a random fill in a program that may refuse a call after it drew")
    mark_lifetimes(segment.nodes, syms, slot_of)
    words, template = builder.assemble(allocation_records(builder, share(builder)))
    return Built(words, template, inputs, outputs, builder.keep, builder.draws)


def _output(builder: Builder, sym, syms: dict, segment) -> Output:
    """Where the caller finds a segment output's value after a call."""
    if isinstance(sym, (IntValue, int)) and not isinstance(sym, bool):
        return Output(None, 0, [], None, int_register(builder, sym), ("int",))
    if isinstance(sym, (list, tuple)):
        return Output(None, 0, [], None, 0, ("list" if isinstance(sym, list) else "tuple",
                                              [_output(builder, item, syms, segment) for item in sym]))
    if not isinstance(sym, TensorValue):
        raise NotNative("a segment output that is not a tensor, an int, or a list or tuple of them")
    if sym.buffer is not None:
        sym.buffer.arena = native.OUT  # (a view's whole buffer: the caller's result lives in it)
        return Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, None)
    if sym.root[0] == "input":
        source = syms[segment.in_slots[sym.root[1]]]
        source = source[sym.root[2]] if len(sym.root) == 3 else source  # (an item of a tuple input)
        return Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, sym.root, source.pointer)
    return Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, sym.root)


def _lower_nodes(builder: Builder, nodes, syms: dict, executor, recorded, top: bool = False,
                 chains: dict | None = None) -> None:
    """Lower `nodes` in order, binding their outputs' symbolic values in `syms` (by frame slot);
    `top`: they are the segment's own nodes (whose positions buffers' lifetimes count in); `chains`:
    the depth-first chains among them by their first's position (depth_first.py)."""
    slot_of = executor.slot_of
    chains = chains or {}
    chained = {id(node) for chain in chains.values() for node in chain.nodes}
    for position, node in enumerate(nodes):
        if top:
            builder.position = position
        if position in chains:
            depth_first.lower_chain(builder, chains[position], syms, slot_of, recorded,
                                    lambda member: _lower_node(builder, member, syms, executor, recorded))
        elif id(node) not in chained:
            _lower_node(builder, node, syms, executor, recorded)


def _lower_node(builder: Builder, node, syms: dict, executor, recorded) -> None:
    """Lower one node, binding its outputs' symbolic values in `syms`."""
    slot_of = executor.slot_of
    if node.op == "prim::Constant":
        return
    args = []
    for v in node.inputs:
        slot = slot_of[id(v)]
        if slot not in syms:  # a constant of a nested block
            syms[slot] = value_of(builder, executor.constants[slot], [], None)
        args.append(syms[slot])
    if node.op == "prim::FusionGroup":
        results = lower_group(builder, node, args, recorded, executor.group_step_of[id(node)])
    elif node.op == "prim::If":
        results = _if(builder, node, args, syms, executor, recorded)
    elif node.op == "prim::Loop":
        results = _loop(builder, node, args, syms, executor, recorded)
    else:
        lower = LOWERINGS.get(node.op)
        if lower is None:
            raise NotNative(node.op)
        results = lower(builder, node, args, recorded)
    if len(results) != len(node.outputs):
        raise NotNative(f"{node.op} gave {len(results)} values for {len(node.outputs)} outputs")
    for v, sym in zip(node.outputs, results):
        syms[slot_of[id(v)]] = sym


def _if(builder: Builder, node, args, syms: dict, executor, recorded) -> list:
    """An If whose condition the signature decides (a scripted rank check, say): its taken block."""
    condition = args[0]
    if isinstance(condition, Condition):
        # An argument check takes the branch that does not raise; another If, the branch the recorded
        # call took (an RNN's full batch at every step). A call that would take the other branch is
        # refused: the steps run it.
        raising = [raises(block) for block in node.blocks]
        taken = raising[1] if raising.count(True) == 1 else recorded[node.inputs[0]]
        if type(taken) is not bool:
            raise NotNative("an If on a comparison the recorded call did not make")
        require(builder, condition, taken)
        condition = taken
    if not isinstance(condition, bool):
        raise NotNative("an If on a value known only at run time")
    block = node.blocks[0 if condition else 1]
    if raises(block):
        if node.outputs:
            raise NotNative("an If whose raising branch gives values")
        return LOWERINGS["prim::RaiseException"](builder, block.last, [], recorded)
    _lower_nodes(builder, list(block), syms, executor, recorded)
    returned = [executor.slot_of[id(v)] for v in block.returns]
    for slot in returned:
        if slot not in syms:  # a constant the block returns
            if slot not in executor.constants:
                raise NotNative("an If whose branch returns a value the program does not hold")
            syms[slot] = value_of(builder, executor.constants[slot], [], None)
    return [syms[slot] for slot in returned]


def _loop(builder: Builder, node, args, syms: dict, executor, recorded) -> list:
    """A for loop (its condition a constant true, in and out) whose body keeps every carried tensor's
    shape: the body's buffers are allocated once, each carried tensor has a buffer of its own that an
    iteration's result is copied into, the counter and carried ints are registers of phase two, and
    an empty list the body appends to once per trip gathers the trips' tensors in one buffer
    (lowerings/lists.py). The time loop of a recurrent model runs so, natively, scripted too."""
    trips, condition, carried = args[0], args[1], args[2:]
    body = node.blocks[0]
    if condition is not True or not _true(body.returns[0]):
        raise NotNative("a loop that is not a for loop")
    slot_of, compute = executor.slot_of, builder.compute
    trips = int_register(builder, trips)
    counter = builder.register()
    builder.varying.add(counter)
    state = []  # per carried value: the TensorValue whose buffer it lives in, its register, an Accumulator or None
    for value in carried:
        if isinstance(value, TensorValue):
            source = dense(builder, value)
            buffer = builder.alloc(source.dtype, source.dims)
            state.append(buffer)
            size = builder.arithmetic("MUL", buffer.buffer.count, builder.const(source.dtype.itemsize))
            compute.append(("COPY", buffer.pointer, source.pointer, size))
        elif type(value) is BuiltList and not value:  # (the loop's list of outputs)
            state.append(Accumulator(trips, counter))
        elif value is None:  # (a GRU's cell state, in the code an LSTM shares)
            state.append(None)
        elif isinstance(value, (IntValue, int)) and not isinstance(value, bool):
            register = builder.register()
            builder.varying.add(register)
            compute.append(("MOV", register, int_register(builder, value)))
            state.append(IntValue(register))
        else:
            raise NotNative("a loop carrying something that is not a tensor, an int, an empty list or None")
    accumulators = []  # (the empty lists from before the loop it appends to)
    for value in appended_lists(body):
        slot = slot_of[id(value)]
        if type(syms.get(slot)) is BuiltList and not syms[slot]:
            syms[slot] = Accumulator(trips, counter)
            accumulators.append(syms[slot])
    syms[slot_of[id(body.params[0])]] = IntValue(counter)
    for param, value in zip(body.params[1:], state):
        syms[slot_of[id(param)]] = value
    top, run, done = builder.label(), builder.label(), builder.label()
    compute += [("MOV", counter, native.ZERO), ("label", top), ("JLT", counter, trips, run), ("JUMP", done),
                ("label", run)]
    phase_one = len(builder.shape)
    builder.loop_depth += 1
    _lower_nodes(builder, list(body), syms, executor, recorded)
    builder.loop_depth -= 1
    if any(r in builder.varying for record in builder.shape[phase_one:] for r in record[1:] if type(r) is int):
        raise NotNative("a loop whose shapes change as it runs")
    for value, result in zip(state, body.returns[1:]):
        result = syms[slot_of[id(result)]]
        if isinstance(value, Accumulator) or value is None:
            if result is not value or value is not None and value.appends != 1:
                raise NotNative("a loop whose list is not appended to once per trip, or whose None changes")
            continue
        if isinstance(value, IntValue):
            compute.append(("MOV", value.register, int_register(builder, result)))
            continue
        result = dense(builder, tensor_of(result))
        if result.dtype != value.dtype or len(result.dims) != len(value.dims):
            raise NotNative("a loop whose carried tensor changes dtype or rank")
        for a, b in zip(result.dims, value.dims):
            builder.equal(a, b)
        if result.pointer != value.pointer:
            size = builder.arithmetic("MUL", value.buffer.count, builder.const(value.dtype.itemsize))
            compute.append(("COPY", value.pointer, result.pointer, size))
    if any(accumulator.appends != 1 for accumulator in accumulators):
        raise NotNative("a loop that does not append to its list once per trip")
    compute += [("ADD", counter, counter, native.ONE), ("JUMP", top), ("label", done)]
    return state


def _true(value) -> bool:
    """Whether an IR value is the constant true (a for loop's condition)."""
    return value.node is not None and value.node.op == "prim::Constant" and value.node.attrs.get("value") is True


class _Recorded:
    """The values the recorded call computed, by IR value."""

    def __init__(self, frame: list, slot_of: dict):
        self.frame, self.slot_of = frame, slot_of

    def __getitem__(self, value):
        return self.frame[self.slot_of[id(value)]]
