"""Writes a segment of a plan down as a program for the interpreter in native/program.py.

The builder walks the segment's nodes once, with the values its steps computed on the call that
just ran (which say dtypes and ranks, and which kernel of each group that call used), and keeps a
symbolic value per IR value: a tensor is registers for its dims (and strides, for a view into a
larger buffer), a register for its data pointer and the buffer it lives in; an int is a register
or a constant. Shapes are never written in: every dim comes from the inputs' dims at run time.
What the program cannot do raises NotNative, and the segment keeps running its steps.

LOWERINGS holds the native implementation of each op the interpreter runs (views, sizes, integer
arithmetic, products); a FusionGroup runs its compiled kernel (runtime/groups.py) for the variant
the recorded call used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scriptc import ops
from scriptc.native import program as native
from scriptc.native.blas import cblas_addresses
from scriptc.native.heads import GEMM_MIN_ROWS, GEMM_SPLIT_MIN, MATVEC_MIN_COLUMNS, MATVEC_ROWS, gemm_runs
from scriptc.native.loops import loop_function

from .groups import PARALLEL_MIN_ELEMENTS, GroupStep

OP = native.OP


class NotNative(Exception):
    """The segment (for this signature) has something the program interpreter cannot run."""


@dataclass
class _Buffer:
    """An allocation: its offset register, becoming its address once the arena is known."""
    pointer: int
    count: int
    itemsize: int
    arena: int = native.SCRATCH


@dataclass
class _Tensor:
    dtype: np.dtype
    dims: list[int]                  # registers
    pointer: int                     # register: the address of element 0
    buffer: _Buffer | None = None    # the allocation it lives in (None: an input's or a constant's memory)
    strides: list[int] | None = None # element strides (registers) of a view; None: contiguous
    root: tuple | None = None        # ("input", k) or ("constant", array) for memory the program did not allocate

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class _Int:
    register: int


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


class _Builder:
    def __init__(self):
        self.template = [0] * native.HEADER
        self.template[native.ONE] = 1
        self.template[native.SPLIT_MIN] = PARALLEL_MIN_ELEMENTS
        self.shape: list[tuple] = []    # records of phase one (dims, checks)
        self.compute: list[tuple] = []  # records of phase two; ("label", name) marks a jump target
        self.buffers: list[_Buffer] = []
        self.constants: dict[int, int] = {0: native.ZERO, 1: native.ONE}
        self.keep: list = []
        self.labels = 0

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
        return self.constants[value]

    def address_of(self, array: np.ndarray) -> int:
        """A register holding the address of a constant array (kept alive with the program)."""
        self.keep.append(array)
        return self.register(array.ctypes.data)

    def label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    # --- arithmetic in phase one -----------------------------------------------------------------
    def arithmetic(self, op: str, a: int, b: int) -> int:
        out = self.register()
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
            self.shape.append(("EQ", a, b))

    def nonzero(self, a: int) -> None:
        """Refuse the call unless a != 0 (a division by it fails)."""
        self.arithmetic("DIV", native.ONE, a)

    def copy_into(self, first: int, registers: list[int], phase: list) -> None:
        for k, r in enumerate(registers):
            phase.append(("MOV", first + k, r))

    def alloc(self, dtype: np.dtype, dims: list[int]) -> _Tensor:
        buffer = _Buffer(self.register(), self.product(dims), dtype.itemsize)
        self.buffers.append(buffer)
        return _Tensor(dtype, list(dims), buffer.pointer, buffer)

    def contiguous_strides(self, dims: list[int]) -> list[int]:
        strides, step = [], native.ONE
        for d in reversed(dims):
            strides.append(step)
            step = self.arithmetic("MUL", step, d)
        return strides[::-1]

    # --- assembly --------------------------------------------------------------------------------
    def assemble(self) -> tuple[list[int], list[int]]:
        records = list(self.shape)
        records += [("MOV", native.NEED[0], native.ZERO), ("MOV", native.NEED[1], native.ZERO)]
        records += [("ALLOC", b.pointer, b.count, b.itemsize, b.arena) for b in self.buffers]
        records += [("RESERVE",)] + [("BASE", b.pointer, b.arena) for b in self.buffers]
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


def _sym_of_value(builder: _Builder, value, inputs: list, k: int | None):
    """The symbolic form of a recorded value: an input's (k not None) or a constant's."""
    if type(value) is np.ndarray:
        if k is None:
            array = value if value.flags.c_contiguous else np.ascontiguousarray(value)
            return _Tensor(value.dtype, [builder.const(d) for d in array.shape], builder.address_of(array),
                           root=("constant", array))
        obj, data, dims = builder.register(), builder.register(), builder.block(value.ndim)
        builder.shape.append(("ARRAY", obj, data, dims, value.ndim))
        inputs.append(("array", obj))
        return _Tensor(value.dtype, list(range(dims, dims + value.ndim)), data, root=("input", k))
    if type(value) is int:
        if k is None:
            return value
        register = builder.register()
        inputs.append(("int", register))
        return _Int(register)
    if k is not None:
        raise NotNative(f"an input of type {type(value).__name__}")
    return value


def _int_register(builder: _Builder, value) -> int:
    if isinstance(value, _Int):
        return value.register
    if type(value) is int:
        return builder.const(value)
    raise NotNative(f"{type(value).__name__} where an int is needed")


def _tensor(value) -> _Tensor:
    if not isinstance(value, _Tensor):
        raise NotNative(f"{type(value).__name__} where a tensor is needed")
    return value


def _contiguous(value) -> _Tensor:
    t = _tensor(value)
    if t.strides is not None:
        raise NotNative("a strided view where a contiguous array is needed")
    return t


def _constant(value):
    if isinstance(value, (_Tensor, _Int)):
        raise NotNative("a value known only at run time where a constant is needed")
    return value


# --- lowerings -------------------------------------------------------------------------------------

def _view(builder: _Builder, node, args, recorded):
    x, sizes = _contiguous(args[0]), args[1]
    if not isinstance(sizes, list):
        raise NotNative("sizes that are not a list")
    count = builder.product(x.dims)
    dims, unknown = [], None
    for k, size in enumerate(sizes):
        if type(size) is int and size == -1:
            if unknown is not None:
                raise NotNative("two -1 sizes")
            unknown = k
            dims.append(None)
        else:
            dims.append(_int_register(builder, size))
    if unknown is not None:
        known = builder.product([d for d in dims if d is not None])
        dims[unknown] = builder.arithmetic("DIV", count, known)
    builder.equal(builder.product(dims), count)
    return [_Tensor(x.dtype, dims, x.pointer, x.buffer, root=x.root)]


def _flatten(builder: _Builder, node, args, recorded):
    x = _contiguous(args[0])
    start, end = (_constant(a) for a in args[1:3])
    rank = x.rank
    if rank == 0:
        return [_Tensor(x.dtype, [native.ONE], x.pointer, x.buffer, root=x.root)]
    start, end = start % rank, end % rank
    dims = x.dims[:start] + [builder.product(x.dims[start:end + 1])] + x.dims[end + 1:]
    return [_Tensor(x.dtype, dims, x.pointer, x.buffer, root=x.root)]


def _unsqueeze(builder: _Builder, node, args, recorded):
    x, dim = _tensor(args[0]), _constant(args[1])
    dim = dim % (x.rank + 1)
    strides = None if x.strides is None else x.strides[:dim] + [native.ONE] + x.strides[dim:]
    return [_Tensor(x.dtype, x.dims[:dim] + [native.ONE] + x.dims[dim:], x.pointer, x.buffer, strides, x.root)]


def _contiguous_op(builder: _Builder, node, args, recorded):
    return [_contiguous(args[0])]


def _size(builder: _Builder, node, args, recorded):
    x, dim = _tensor(args[0]), _constant(args[1])
    return [_Int(x.dims[dim % x.rank])]


def _dim(builder: _Builder, node, args, recorded):
    return [_tensor(args[0]).rank]


def _numel(builder: _Builder, node, args, recorded):
    return [_Int(builder.product(_tensor(args[0]).dims))]


def _integer(op: str, fold):
    def lower(builder: _Builder, node, args, recorded):
        a, b = args
        if type(a) is int and type(b) is int:
            return [fold(a, b)]
        if not all(isinstance(v, _Int) or type(v) is int for v in (a, b)):
            raise NotNative("arithmetic on values that are not ints")
        return [_Int(builder.arithmetic(op, _int_register(builder, a), _int_register(builder, b)))]
    return lower


def _list(builder: _Builder, node, args, recorded):
    return [list(args)]


def _unpack(builder: _Builder, node, args, recorded):
    items = args[0]
    if not isinstance(items, (list, tuple)) or len(items) != len(node.outputs):
        raise NotNative("an unpack of something that is not a list of its length")
    return list(items)


def _chunk(builder: _Builder, node, args, recorded):
    x, chunks, dim = _tensor(args[0]), _constant(args[1]), _constant(args[2])
    dim = dim % x.rank
    if len(recorded[node.outputs[0]]) != chunks:
        raise NotNative("a chunk into fewer pieces than asked")
    size = builder.arithmetic("DIV", x.dims[dim], builder.const(chunks))
    builder.equal(builder.arithmetic("MUL", size, builder.const(chunks)), x.dims[dim])
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    step = builder.arithmetic("MUL", size, strides[dim])
    out = []
    for j in range(chunks):
        pointer = builder.register()
        builder.compute.append(("ADDR", pointer, x.pointer, builder.arithmetic("MUL", step, builder.const(j)),
                                x.dtype.itemsize))
        dims = list(x.dims)
        dims[dim] = size
        out.append(_Tensor(x.dtype, dims, pointer, x.buffer, list(strides), x.root))
    return [out]


def _zeros(size_argument: int | None):
    """zeros and its kin: the dims of the size list argument `size_argument`, or of the tensor argument
    0 (zeros_like) when it is None; the dtype the recorded call's result has."""
    def lower(builder: _Builder, node, args, recorded):
        if size_argument is None:
            dims = list(_tensor(args[0]).dims)
        else:
            sizes = args[size_argument]
            if not isinstance(sizes, list):
                raise NotNative("sizes that are not a list")
            dims = [_int_register(builder, s) for s in sizes]
        out = builder.alloc(recorded[node.outputs[0]].dtype, dims)
        builder.compute.append(("ZERO", out.pointer, builder.arithmetic("MUL", out.buffer.count,
                                                                        builder.const(out.dtype.itemsize))))
        return [out]
    return lower


def _matmul(builder: _Builder, node, args, recorded):
    a, b = _contiguous(args[0]), _contiguous(args[1])
    return [_product(builder, a, b)]


def _product(builder: _Builder, a: _Tensor, b: _Tensor) -> _Tensor:
    """a @ b for a of rank 2 or more (its leading dims as rows) and b a matrix, both contiguous and of
    one float dtype: BLAS's GEMV for one row, the few-row loop for 2-6 (heads.py's rules), the
    compiled GEMM split across the pool where it runs, else BLAS's GEMM."""
    dtype = a.dtype
    if a.rank < 2 or b.rank != 2 or b.dtype != dtype or dtype.name not in ("float32", "float64"):
        raise NotNative("a product that is not rows times a matrix of one float dtype")
    depth, width = b.dims
    builder.equal(a.dims[-1], depth)
    rows = builder.product(a.dims[:-1])
    out = builder.alloc(dtype, a.dims[:-1] + [width])
    blas = cblas_addresses()
    suffix = "F32" if dtype.name == "float32" else "F64"
    compute = builder.compute
    done = builder.label()
    if blas is not None:  # one row: GEMV
        more = builder.label()
        compute.append(("JLT", native.ONE, rows, more))
        compute.append((f"GEMV_{suffix}", builder.const(blas["gemv"][dtype.name]), depth, width, b.pointer,
                        a.pointer, out.pointer))
        compute.append(("JUMP", done))
        compute.append(("label", more))
    few = builder.label()
    if gemm_runs():
        from scriptc.native import gemm
        compute.append(("JLT", rows, builder.const(GEMM_MIN_ROWS), few))
        vectors = builder.arithmetic("DIV", builder.arithmetic("ADD", width, builder.const(
            gemm.vector_columns(dtype.name) - 1)), builder.const(gemm.vector_columns(dtype.name)))
        ptrs, meta = builder.block(5), builder.block(5)
        zero = builder.address_of(np.zeros(1, dtype))
        builder.copy_into(ptrs, [a.pointer, b.pointer, out.pointer, zero, zero], compute)
        builder.copy_into(meta, [rows, depth, width, native.ZERO, native.ZERO], builder.shape)
        # SPLIT compares with the elementwise threshold: scale the multiply-adds to it.
        work = builder.arithmetic("DIV", builder.product([rows, depth, width]),
                                  builder.const(max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
        compute.append(("SPLIT", builder.const(loop_function("gemm", dtype.name)), vectors, ptrs, meta, work))
    elif blas is not None:
        compute.append(("JLT", rows, builder.const(MATVEC_ROWS.start), few))
        compute.append((f"GEMM_{suffix}", builder.const(blas["gemm"][dtype.name]), rows, width, depth, a.pointer,
                        b.pointer, out.pointer))
    else:
        raise NotNative("no BLAS to call")
    compute.append(("JUMP", done))
    compute.append(("label", few))  # 2 to 6 rows: the few-row loop, one chunk of k
    ptrs, meta = builder.block(3), builder.block(4)
    builder.copy_into(ptrs, [a.pointer, b.pointer, out.pointer], compute)
    builder.copy_into(meta, [rows, depth, width, native.ONE], builder.shape)
    if blas is not None and gemm_runs():
        wide = builder.label()
        compute.append(("JLT", builder.const(MATVEC_MIN_COLUMNS - 1), width, wide))
        compute.append((f"GEMM_{suffix}", builder.const(blas["gemm"][dtype.name]), rows, width, depth, a.pointer,
                        b.pointer, out.pointer))
        compute.append(("JUMP", done))
        compute.append(("label", wide))
    compute.append(("KERNEL", builder.const(loop_function("matvec", dtype.name)), native.ONE, ptrs, meta))
    compute.append(("label", done))
    return out


def _group(builder: _Builder, node, args, recorded, step: GroupStep):
    """A FusionGroup: its head, then the kernel the recorded call ran, its launch in registers."""
    concrete = [recorded[v] for v in node.inputs]
    found = step.variant_for(concrete)
    if found is None:
        raise NotNative("a group that ran no kernel")
    variant, shape = found
    spec = variant.spec
    if variant.head_is_result or spec.notes.get("then") is not None or any(
            variant.scalar_dtypes.get(i) is not None and i not in dict(variant.fixed_reads) for i in spec.used_inputs):
        raise NotNative("a group whose kernel the program cannot launch")
    syms = list(args)
    if variant.head is not None:
        if variant.head.name != "matmul":
            raise NotNative(f"a {variant.head.name} head")
        (pa, ca), (pb, cb) = variant.head_sources
        a = _contiguous(syms[pa] if pa is not None else _sym_of_value(builder, ca, [], None))
        b = _contiguous(syms[pb] if pb is not None else _sym_of_value(builder, cb, [], None))
        syms.append(_product(builder, a, b))
    rank = len(shape)
    iteration: list[int | None] = [None] * rank
    fixed = dict(variant.fixed_reads)
    for i, check in variant.checks:
        if check is None:
            continue
        dtype, ndim, ones = check
        t = _tensor(syms[i])
        if t.dtype != dtype or t.rank != ndim:
            raise NotNative("a group input of another dtype or rank than its kernel's")
        if t.strides is not None and t.strides[-1] != native.ONE and ndim - 1 not in ones:
            raise NotNative("a group input whose last dim is strided")
        offset = rank - ndim
        for k in range(ndim):
            if k in ones:
                builder.equal(t.dims[k], native.ONE)
            elif iteration[offset + k] is None:
                iteration[offset + k] = t.dims[k]
            else:
                builder.equal(t.dims[k], iteration[offset + k])
    iteration = [native.ONE if d is None else d for d in iteration]
    merge = spec.notes.get("merge")
    if merge is not None and any(isinstance(s, _Tensor) and s.strides is not None for s in syms):
        raise NotNative("a reduction over merged dims of a strided view")
    tail = spec.tail

    def merged(dims: list[int]) -> list[int]:
        if merge is None:
            return list(dims)
        return dims[:merge[0]] + [builder.product(dims[merge[0]:merge[1] + 1])] + dims[merge[1] + 1:]

    kernel_dims = merged(iteration)
    tensors = [i for i, inp in enumerate(spec.inputs) if inp.kind == "tensor"]
    # Views (chunks of a product's result) are read in place, by rows with their strides.
    flat = variant.flat and not any(isinstance(syms[i], _Tensor) and syms[i].strides is not None
                                    for i in spec.used_inputs)
    kernel = variant.kernel if flat else variant.strided_kernel()
    meta = builder.block(1 if flat else spec.rank * (1 + len(tensors)))
    count = builder.product(iteration)
    if flat:
        total = count
    else:
        builder.copy_into(meta, kernel_dims, builder.shape)
        used = set(spec.used_inputs)
        for n, i in enumerate(tensors):
            first = meta + spec.rank * (n + 1)
            if i not in used:
                continue  # (an input only the head reads: its strides stay 0, unread)
            t = syms[i]
            dims = merged([native.ONE] * (rank - t.rank) + t.dims)
            dims_block = builder.block(len(dims))
            builder.copy_into(dims_block, dims, builder.shape)
            own = -1
            if t.strides is not None:
                own = builder.block(len(dims))
                builder.copy_into(own, [native.ONE] * (rank - t.rank) + t.strides, builder.shape)
            builder.shape.append(("STRIDES", first, spec.rank, meta, dims_block, len(dims), own))
        spanned = tail.dim if tail is not None and tail.form in (ops.REDUCE, ops.NORMALIZE) else None
        total = builder.product([kernel_dims[d] for d in range(spec.rank - 1) if d != spanned])
    reduces = tail is not None and tail.form == ops.REDUCE
    out_dims = list(iteration)
    if reduces:
        reduced = range(merge[0], merge[1] + 1) if merge else [tail.dim]
        if tail.role.combine in ("max", "min"):
            for d in reduced:
                builder.nonzero(iteration[d])  # an empty amax/amin raises, from the steps
        out_dims = [native.ONE if d in reduced else n for d, n in enumerate(iteration)
                    if tail.keepdim or d not in reduced]
    outputs = [builder.alloc(dtype, out_dims) for dtype in variant.out_dtypes]
    ptrs = builder.block(len(spec.inputs) + len(outputs))
    for i in range(len(spec.inputs)):
        if i in fixed:
            value = fixed[i]
            builder.template[ptrs + i] = value.ctypes.data
            builder.keep.append(value)
        elif i in spec.used_inputs:
            builder.compute.append(("MOV", ptrs + i, _tensor(syms[i]).pointer))
    for j, out in enumerate(outputs):
        builder.compute.append(("MOV", ptrs + len(spec.inputs) + j, out.pointer))
    function = builder.const(kernel.address)
    builder.compute.append(("SPLIT", function, total, ptrs, meta, count))
    return outputs


LOWERINGS = {
    "view": _view, "reshape": _view, "flatten": _flatten, "unsqueeze": _unsqueeze, "contiguous": _contiguous_op,
    "size": _size, "dim": _dim, "numel": _numel, "chunk": _chunk, "matmul": _matmul,
    "zeros": _zeros(0), "new_zeros": _zeros(1), "zeros_like": _zeros(None),
    "prim::ListConstruct": _list, "prim::TupleConstruct": _list, "prim::ListUnpack": _unpack,
    "prim::TupleUnpack": _unpack,
    "add.scalar": _integer("ADD", lambda a, b: a + b), "sub.scalar": _integer("SUB", lambda a, b: a - b),
    "mul.scalar": _integer("MUL", lambda a, b: a * b), "floordiv.scalar": _integer("DIV", lambda a, b: a // b),
    "max.scalar": _integer("MAX", max),
}


def runs_natively(node) -> bool:
    """Whether a node may be part of a segment: an op the interpreter runs, or a FusionGroup whose
    head (if any) it runs."""
    if node.op == "prim::FusionGroup":
        head = next((n for n in node.blocks[0] if n.op != "prim::Constant"), None)
        return head is None or head.op != "conv2d"
    return node.op in LOWERINGS


def build(segment, frame: list) -> Built:
    """The program of `segment` (a SegmentStep) for the signature of the call whose values `frame`
    holds; NotNative when it has something the interpreter cannot run."""
    executor = segment.executor
    slot_of = executor.slot_of
    builder = _Builder()
    inputs: list[tuple] = []
    syms: dict[int, object] = {}
    for slot in segment.constant_slots:
        syms[slot] = _sym_of_value(builder, executor.constants[slot], inputs, None)
    for k, slot in enumerate(segment.in_slots):
        syms[slot] = _sym_of_value(builder, frame[slot], inputs, k)
    recorded = _Recorded(frame, slot_of)
    for node, step in zip(segment.nodes, segment.steps):
        args = [syms[slot_of[id(v)]] for v in node.inputs]
        if node.op == "prim::FusionGroup":
            results = _group(builder, node, args, recorded, step)
        else:
            lower = LOWERINGS.get(node.op)
            if lower is None:
                raise NotNative(node.op)
            results = lower(builder, node, args, recorded)
        if len(results) != len(node.outputs):
            raise NotNative(f"{node.op} gave {len(results)} values for {len(node.outputs)} outputs")
        for v, sym in zip(node.outputs, results):
            syms[slot_of[id(v)]] = sym
    outputs = []
    for slot in segment.out_slots:
        sym = syms[slot]
        if not isinstance(sym, _Tensor):
            raise NotNative("a segment output that is not a tensor")
        if sym.buffer is not None:
            sym.buffer.arena = native.OUT  # (a view's whole buffer: the caller's result lives in it)
            outputs.append(Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, None))
        elif sym.root[0] == "input":
            k = sym.root[1]
            outputs.append(Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, sym.root,
                                  syms[segment.in_slots[k]].pointer))
        else:
            outputs.append(Output(sym.dtype, sym.dtype.itemsize, sym.dims, sym.strides, sym.pointer, sym.root))
    words, template = builder.assemble()
    return Built(words, template, inputs, outputs, builder.keep)


class _Recorded:
    """The values the recorded call computed, by IR value."""

    def __init__(self, frame: list, slot_of: dict):
        self.frame, self.slot_of = frame, slot_of

    def __getitem__(self, value):
        return self.frame[self.slot_of[id(value)]]


