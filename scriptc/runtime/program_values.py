"""The symbolic values and the builder of segment programs (program_builder.py): registers, buffers,
the two phases of records, and their assembly into the words native/program.py interprets."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scriptc.native import program as native

from .groups import PARALLEL_MIN_ELEMENTS

OP = native.OP


class NotNative(Exception):
    """The segment (for this signature) has something the program interpreter cannot run; `at`: the
    position of the segment's node that has it, where one node does (program_builder.build)."""

    at: int | None = None


@dataclass
class Buffer:
    """An allocation: its offset register, becoming its address once the arena is known; it lives
    from top-level node `born` of the segment to node `dies` (program_memory.py)."""
    pointer: int
    count: int
    itemsize: int
    arena: int = native.SCRATCH
    born: int = 0
    dies: int = 0


@dataclass
class TensorValue:
    dtype: np.dtype
    dims: list[int]                  # registers
    pointer: int                     # register: the address of element 0
    buffer: Buffer | None = None    # the allocation it lives in (None: an input's or a constant's memory)
    strides: list[int] | None = None # element strides (registers) of a view; None: contiguous
    root: tuple | None = None        # ("input", k[, item]) or ("constant", array): memory the program did not allocate

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class IntValue:
    register: int


@dataclass(frozen=True)
class Condition:
    """A comparison of ints known only at run time (`op`: eq, ne, lt, le, gt or ge): an If on it
    whose other branch raises becomes a check that refuses the call (lowerings/scalars.require)."""
    op: str
    a: int | tuple  # register (a tuple of them: a size list, compared by eq or ne)
    b: int | tuple


@dataclass
class Pieces:
    """split(tensor, size, dim) into as many pieces as the dim holds at run time (`count`, a register):
    a list a program reads by index (getitem.list) or counts (len.list), never unpacks."""
    tensor: TensorValue
    dim: int
    size: int   # register
    count: int  # register


@dataclass
class Accumulator:
    """An empty list a for loop carries and appends one tensor to per trip: the trips' tensors, stacked
    along a new first dim in one buffer (allocated at the first append, `trips` items long)."""
    trips: int    # register
    counter: int  # register: the loop's
    stacked: TensorValue | None = None
    appends: int = 0


@dataclass
class Output:
    """Where a segment output is: in the out arena, or the input or constant it views."""
    dtype: np.dtype
    itemsize: int
    dims: list[int]
    strides: list[int] | None
    pointer: int
    root: tuple | None          # None: the out arena
    data: int | None = None     # for an input's view: the register holding the input's address


@dataclass
class Built:
    words: list[int]
    template: list[int]
    inputs: list[tuple]
    outputs: list[Output]
    keep: list = field(default_factory=list)
    draws: bool = False  # whether it fills from the default generator (its caller sets native.GENERATOR)


class Builder:
    def __init__(self):
        self.template = [0] * native.HEADER
        self.template[native.ONE] = 1
        self.template[native.SPLIT_MIN] = PARALLEL_MIN_ELEMENTS
        self.shape: list[tuple] = []    # records of phase one (dims, checks)
        self.compute: list[tuple] = []  # records of phase two; ("label", name) marks a jump target
        self.buffers: list[Buffer] = []
        self.counts: dict[tuple, int] = {}  # element count registers by dims registers
        self.position = 0  # the top-level node being lowered (where a buffer is born)
        self.loop_depth = 0  # how many loops' bodies are being lowered (an append there is per trip)
        self.constants: dict[int, int] = {0: native.ZERO, 1: native.ONE}
        self.constant_registers: set[int] = {native.ZERO, native.ONE}
        self.keep: list = []
        self.draws = False  # set by a random fill (lowerings/samplers.py)
        self.slices = 1  # the most slices a SPLIT cuts its range into: the executor's threads
        self.labels = 0
        # Registers a loop changes as it runs (its counter, its carried ints, what follows from them):
        # arithmetic on them runs in phase two, and no shape or size may depend on them.
        self.varying: set[int] = set()
        # Cats whose parts' producers write into their result (program_memory.plan_concatenations):
        # a Destination by producer node id, a Concatenation by cat node id.
        self.destinations: dict[int, object] = {}
        self.concatenations: dict[int, object] = {}

    # --- registers -------------------------------------------------------------------------------
    def register(self, value: int = 0) -> int:
        self.template.append(int(value))
        return len(self.template) - 1

    def block(self, size: int) -> int:
        """`size` consecutive registers; the first one's number."""
        first = len(self.template)
        self.template.extend([0] * size)
        return first

    def const(self, value: int) -> int:
        value = int(value)
        if value not in self.constants:
            self.constants[value] = self.register(value)
            self.constant_registers.add(self.constants[value])
        return self.constants[value]

    def known(self, register: int) -> int | None:
        """The value of a constant register; None for one the program sets."""
        return self.template[register] if register in self.constant_registers else None

    def address_of(self, array: np.ndarray) -> int:
        """A register holding the address of a constant array (kept alive with the program)."""
        self.keep.append(array)
        return self.register(array.ctypes.data)

    def label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    # --- arithmetic: in phase one, or in phase two on values a loop changes ----------------------
    def arithmetic(self, op: str, a: int, b: int) -> int:
        out = self.register()
        if a in self.varying or b in self.varying:  # (a loop's counter, or something worked out from it)
            self.varying.add(out)
            self.compute.append((op, out, a, b))
        else:
            self.shape.append((op, out, a, b))
        return out

    def product(self, registers: list[int]) -> int:
        if not registers:
            return native.ONE
        total = registers[0]
        for r in registers[1:]:
            total = self.arithmetic("MUL", total, r)
        return total

    def equal(self, a: int, b: int) -> None:
        if a != b:
            if self.known(a) is not None and self.known(b) is not None:  # (a program that refuses every call)
                raise NotNative(f"sizes that never match ({self.known(a)} and {self.known(b)})")
            (self.compute if a in self.varying or b in self.varying else self.shape).append(("EQ", a, b))

    def nonzero(self, a: int) -> None:
        """Refuse the call unless a != 0 (a division by it fails)."""
        self.arithmetic("DIV", native.ONE, a)

    def copy_into(self, first: int, registers: list[int], phase: list) -> None:
        for k, r in enumerate(registers):
            phase.append(("MOV", first + k, r))

    def alloc(self, dtype: np.dtype, dims: list[int]) -> TensorValue:
        key = tuple(dims)
        if any(d in self.varying for d in key):  # (ALLOCs run before the loop that would size it)
            raise NotNative("a buffer whose size changes as a loop runs")
        if key not in self.counts:
            self.counts[key] = self.product(dims)
        buffer = Buffer(self.register(), self.counts[key], dtype.itemsize, born=self.position, dies=self.position)
        self.buffers.append(buffer)
        return TensorValue(dtype, list(dims), buffer.pointer, buffer)

    def batch_steps(self, batch: int, per_step: int):
        """Opens a loop, in phase two, over `batch` (a register) `per_step` at a time: returns the
        registers (first, count) - the step's first index and how many it has, per_step but in the
        last step - and a function that closes the loop after the records of its body."""
        compute, const = self.compute, self.const
        first, count = self.register(), self.register()
        top, body, done, fewer = (self.label() for _ in range(4))
        compute.append(("MOV", first, native.ZERO))
        compute.append(("label", top))
        compute.append(("JLT", first, batch, body))
        compute.append(("JUMP", done))
        compute.append(("label", body))
        compute.append(("SUB", count, batch, first))  # count = min(per_step, batch - first)
        compute.append(("JLT", count, const(per_step), fewer))
        compute.append(("MOV", count, const(per_step)))
        compute.append(("label", fewer))

        def close() -> None:
            compute.append(("ADD", first, first, const(per_step)))
            compute.append(("JUMP", top))
            compute.append(("label", done))
        return first, count, close

    def each_image_of_step(self, images: int, count: int, first: int, index: int, emit) -> None:
        """Inside a batch_steps loop of `images` images a step: emit(k) for k < images, each skipped
        at run time unless k < count (the step's images), with `index` holding first + k, the
        image's index in the batch."""
        passed = self.label()
        for k in range(images):
            taken = self.label()
            self.compute.append(("JLT", self.const(k), count, taken))
            self.compute.append(("JUMP", passed))
            self.compute.append(("label", taken))
            self.compute.append(("ADD", index, first, self.const(k)))
            emit(k)
        self.compute.append(("label", passed))

    def contiguous_strides(self, dims: list[int]) -> list[int]:
        strides, step = [], native.ONE
        for d in reversed(dims):
            strides.append(step)
            step = self.arithmetic("MUL", step, d)
        return strides[::-1]

    # --- assembly --------------------------------------------------------------------------------
    def assemble(self, allocation: tuple[list, list, list]) -> tuple[list[int], list[int]]:
        """The program's words and its frame's template; `allocation`: the records that size, ALLOC
        and BASE its buffers (program_memory.allocation_records)."""
        sizes, allocs, bases = allocation
        records = list(self.shape) + sizes
        records += [("MOV", native.NEED[0], native.ZERO), ("MOV", native.NEED[1], native.ZERO)]
        records += allocs + [("RESERVE",)] + bases
        records += self.compute + [("END",)]
        words, at, targets = [], 0, {}
        for record in records:  # where each label is
            if record[0] == "label":
                targets[record[1]] = at
            else:
                at += 1 + native.OPERANDS[record[0]]
        for record in records:
            if record[0] == "label":
                continue
            op, *operands = record
            assert len(operands) == native.OPERANDS[op], record
            words.append(OP[op])
            words += [targets[o] if isinstance(o, str) else o for o in operands]
        # The needs are reset by the program itself (the MOVs above): records before them only compute dims.
        return words, self.template


def value_of(builder: Builder, value, inputs: list, k: int | None):
    """The symbolic form of a recorded value: an input's (k not None) or a constant's."""
    if type(value) is np.ndarray:
        if k is None:
            array = value if value.flags.c_contiguous else np.ascontiguousarray(value)
            return TensorValue(value.dtype, [builder.const(d) for d in array.shape], builder.address_of(array),
                           root=("constant", array))
        tensor, obj = _input_array(builder, value, ("input", k))
        inputs.append(("array", obj))
        return tensor
    if k is not None and type(value) in (tuple, list) and value and all(type(v) is np.ndarray for v in value):
        # (an LSTM's (h, c) traced as one tuple input: its arrays, each read like an input's)
        items = [_input_array(builder, v, ("input", k, j)) for j, v in enumerate(value)]
        inputs.append(("items", [obj for _, obj in items]))
        return type(value)(tensor for tensor, _ in items)
    if type(value) is int:
        if k is None:
            return value
        register = builder.register()
        inputs.append(("int", register))
        return IntValue(register)
    if k is not None:
        raise NotNative(f"an input of type {type(value).__name__}")
    return value


def _input_array(builder: Builder, value: np.ndarray, root: tuple) -> tuple[TensorValue, int]:
    """An input array's TensorValue (its data pointer and dims read by ARRAY) and the register that
    holds the array object."""
    obj, data, dims = builder.register(), builder.register(), builder.block(value.ndim)
    builder.shape.append(("ARRAY", obj, data, dims, value.ndim))
    return TensorValue(value.dtype, list(range(dims, dims + value.ndim)), data, root=root), obj


class BuiltList(list):
    """A list the program made (prim::ListConstruct): appends outside loops go into it (an input's
    or a constant's list is not the program's to change)."""


def int_register(builder: Builder, value) -> int:
    if isinstance(value, IntValue):
        return value.register
    if type(value) is int:
        return builder.const(value)
    raise NotNative(f"{type(value).__name__} where an int is needed")


def tensor_of(value) -> TensorValue:
    if not isinstance(value, TensorValue):
        raise NotNative(f"{type(value).__name__} where a tensor is needed")
    return value


def contiguous_of(value) -> TensorValue:
    t = tensor_of(value)
    if t.strides is not None:
        raise NotNative("a strided view where a contiguous array is needed")
    return t


def dense(builder: "Builder", value, recorded: np.ndarray | None = None) -> TensorValue:
    """A contiguous tensor of value's elements: itself, or a copy of a view whose rows (its last dim)
    are contiguous and lie one row stride apart (a chunk or a split piece: what products read); of
    any other view (a transposed one: attention's keys) where `recorded`, the value the recorded
    call saw, says its layout is another."""
    t = tensor_of(value)
    if t.strides is None:
        return t
    if recorded is not None and not _rows_one_stride_apart(recorded):
        return copied(builder, t)
    rows = builder.product(t.dims[:-1])
    if t.dims[-1] != native.ONE:
        builder.equal(t.strides[-1], native.ONE)
    for d in range(t.rank - 2):  # the outer dims collapse into the rows
        if t.dims[d] != native.ONE:
            builder.equal(t.strides[d], builder.arithmetic("MUL", t.strides[d + 1], t.dims[d + 1]))
    out = builder.alloc(t.dtype, t.dims)
    itemsize = builder.const(t.dtype.itemsize)
    row = builder.arithmetic("MUL", t.dims[-1], itemsize)
    step = builder.arithmetic("MUL", t.strides[-2], itemsize) if t.rank > 1 else row
    builder.compute.append(("COPY2D", out.pointer, row, t.pointer, step, rows, row))
    return out


def _rows_one_stride_apart(array: np.ndarray) -> bool:
    shape, strides = array.shape, array.strides
    if not shape:
        return True
    return (shape[-1] == 1 or strides[-1] == array.itemsize) and all(
        shape[d] == 1 or strides[d] == strides[d + 1] * shape[d + 1] for d in range(len(shape) - 2))


def copied(builder: "Builder", x: TensorValue) -> TensorValue:
    """A contiguous copy of a strided view."""
    out = builder.alloc(x.dtype, x.dims)
    dims, strides = builder.block(x.rank), builder.block(x.rank)
    builder.copy_into(dims, x.dims, builder.shape)
    builder.copy_into(strides, x.strides, builder.shape)
    builder.compute.append(("STRIDED", out.pointer, x.pointer, x.rank, dims, strides, x.dtype.itemsize))
    return out


def constant_array(value) -> np.ndarray:
    """The array of a constant tensor (a frozen weight)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, TensorValue) and value.root is not None and value.root[0] == "constant":
        return value.root[1]
    raise NotNative("a weight that is not a constant")


def constant_of(value):
    """`value` where a lowering needs a constant (a list of them included: pads computed from sizes are not)."""
    if isinstance(value, (TensorValue, IntValue)) or (
            isinstance(value, (list, tuple)) and any(isinstance(v, (TensorValue, IntValue)) for v in value)):
        raise NotNative("a value known only at run time where a constant is needed")
    return value


# --- lowerings -------------------------------------------------------------------------------------
