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


def _dense(builder: "_Builder", value) -> _Tensor:
    """A contiguous tensor of value's elements: itself, or a copy of a view whose rows (its last dim)
    are contiguous and lie one row stride apart (a chunk or a split piece: what products read)."""
    t = _tensor(value)
    if t.strides is None:
        return t
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


def _constant_array(value) -> np.ndarray:
    """The array of a constant tensor (a frozen weight)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, _Tensor) and value.root is not None and value.root[0] == "constant":
        return value.root[1]
    raise NotNative("a weight that is not a constant")


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


def _pieces(builder: _Builder, x: _Tensor, dim: int, size: int, count: int) -> list[_Tensor]:
    """`count` views of x, each `size` (a register) long along dim."""
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    step = builder.arithmetic("MUL", size, strides[dim])
    out = []
    for j in range(count):
        pointer = builder.register()
        builder.compute.append(("ADDR", pointer, x.pointer, builder.arithmetic("MUL", step, builder.const(j)),
                                x.dtype.itemsize))
        dims = list(x.dims)
        dims[dim] = size
        out.append(_Tensor(x.dtype, dims, pointer, x.buffer, list(strides), x.root))
    return out


def _chunk(builder: _Builder, node, args, recorded):
    x, chunks, dim = _tensor(args[0]), _constant(args[1]), _constant(args[2])
    dim = dim % x.rank
    if len(recorded[node.outputs[0]]) != chunks:
        raise NotNative("a chunk into fewer pieces than asked")
    size = builder.arithmetic("DIV", x.dims[dim], builder.const(chunks))
    builder.equal(builder.arithmetic("MUL", size, builder.const(chunks)), x.dims[dim])
    return [_pieces(builder, x, dim, size, chunks)]


def _split(builder: _Builder, node, args, recorded):
    """split by a size: pieces of that size (the dim must divide evenly, as the recorded call's did)."""
    x, size, dim = _tensor(args[0]), _constant(args[1]), _constant(args[2])
    dim = dim % x.rank
    count = len(recorded[node.outputs[0]])
    if type(size) is not int or size <= 0 or recorded[node.inputs[0]].shape[dim] != count * size:
        raise NotNative("a split into pieces of other sizes")
    builder.equal(x.dims[dim], builder.const(count * size))
    return [_pieces(builder, x, dim, builder.const(size), count)]


def _join(stack: bool):
    """cat (stack: along a new dim) of contiguous tensors of one dtype: each copied in as rows."""
    def lower(builder: _Builder, node, args, recorded):
        tensors, dim = args[0], _constant(args[1])
        if not isinstance(tensors, list) or not tensors:
            raise NotNative("a cat of something that is not a list of tensors")
        parts = [_tensor(t) for t in tensors]
        first = parts[0]
        rank = first.rank + stack
        dim = dim % rank
        if any(t.dtype != first.dtype or t.rank != first.rank for t in parts):
            raise NotNative("a cat of tensors of several dtypes or ranks")
        if stack:
            parts = [_Tensor(t.dtype, t.dims[:dim] + [native.ONE] + t.dims[dim:], t.pointer, t.buffer,
                             None if t.strides is None else t.strides[:dim] + [native.ONE] + t.strides[dim:], t.root)
                     for t in parts]
        for t in parts[1:]:
            for d in range(rank):
                if d != dim:
                    builder.equal(t.dims[d], parts[0].dims[d])
        dims = list(parts[0].dims)
        dims[dim] = _sum(builder, [t.dims[dim] for t in parts])
        out = builder.alloc(first.dtype, dims)
        rows = builder.product(dims[:dim])
        itemsize = builder.const(first.dtype.itemsize)
        out_row = builder.arithmetic("MUL", builder.product(dims[dim:]), itemsize)
        offset = native.ZERO
        for t in parts:
            row = builder.arithmetic("MUL", builder.product(t.dims[dim:]), itemsize)
            if t.strides is None:
                source_step = row
            else:
                # Rows of a view: whole below dim (contiguous there), `strides[dim - 1]` apart.
                inner = builder.contiguous_strides(t.dims)
                for d in range(dim, rank):
                    if t.dims[d] != native.ONE:
                        builder.equal(t.strides[d], inner[d])
                source_step = builder.arithmetic("MUL", t.strides[dim - 1], itemsize) if dim else row
            target = builder.register()
            builder.compute.append(("ADDR", target, out.pointer, offset, 1))
            builder.compute.append(("COPY2D", target, out_row, t.pointer, source_step, rows, row))
            offset = builder.arithmetic("ADD", offset, row)
        return [out]
    return lower


def _sum(builder: _Builder, registers: list[int]) -> int:
    total = registers[0]
    for r in registers[1:]:
        total = builder.arithmetic("ADD", total, r)
    return total


def _pool(mode: int):
    """max_pool2d / avg_pool2d with the pool loop: the image size the recorded call had (checked)."""
    def lower(builder: _Builder, node, args, recorded):
        from scriptc.native import opaque, pool
        x = _contiguous(args[0])
        constants = [_constant(a) for a in args[1:]]
        concrete = recorded[node.inputs[0]]
        if x.rank != 4 or x.dtype.name not in pool.FUNCTIONS:
            raise NotNative("pooling that is not of 4-D floats")
        if mode == pool.MAX:
            kernel_size, stride, padding, dilation, ceil_mode = constants
            geometry = opaque.pool_geometry(concrete.shape, kernel_size, stride, padding, dilation, ceil_mode,
                                            "max_pool2d")
            divisors = builder.const(0)
        else:
            kernel_size, stride, padding, ceil_mode, include_pad, divisor = constants
            geometry = opaque.pool_geometry(concrete.shape, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
            divisors = builder.address_of(opaque.average_divisors(concrete.shape, x.dtype, kernel_size, stride,
                                                                  padding, ceil_mode, include_pad, divisor))
        builder.equal(x.dims[2], builder.const(geometry[0]))
        builder.equal(x.dims[3], builder.const(geometry[1]))
        out = builder.alloc(x.dtype, x.dims[:2] + [builder.const(geometry[2]), builder.const(geometry[3])])
        ptrs, meta = builder.block(3), builder.block(13)
        builder.copy_into(ptrs, [x.pointer, out.pointer, divisors], builder.compute)
        builder.copy_into(meta, [builder.const(g) for g in geometry + [mode]], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], x.dims[1])
        builder.compute.append(("KERNEL", builder.const(loop_function("pool", x.dtype.name)), planes, ptrs, meta))
        return [out]
    return lower


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
    return [_product(builder, _dense(builder, args[0]), _dense(builder, args[1]))]


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


def _convolution(builder: _Builder, args: list, x_value: np.ndarray, floor: float | None) -> _Tensor:
    """conv2d of a batch of any size, the image size and channels the recorded call had (checked):
    the depthwise loop for a depthwise convolution, else per image its columns (the image itself for
    a 1x1 convolution of stride 1, im2col's otherwise) times each group's weights by the compiled GEMM,
    which adds the bias and applies the floor (a fused ReLU) as it stores."""
    from scriptc.native import im2col
    from scriptc.ops.linalg import _conv_params

    x = _dense(builder, args[0])
    weight = _constant_array(args[1])
    bias = None if args[2] is None else _constant_array(args[2])
    stride, padding, dilation, groups = (_constant(a) for a in args[3:7])
    if x.rank != 4 or weight.dtype != x.dtype or x.dtype.name not in im2col.FUNCTIONS or not gemm_runs():
        raise NotNative("a convolution not of 4-D floats of one dtype, or no compiled GEMM")
    sh, sw, ph, pw, dh, dw, oh, ow = _conv_params(x_value, weight, stride, padding, dilation, groups)
    _, c, h, w = x_value.shape
    o, per_group, kh, kw = weight.shape
    for d, size in zip(x.dims[1:], (c, h, w)):
        builder.equal(d, builder.const(size))
    out = builder.alloc(x.dtype, [x.dims[0], builder.const(o), builder.const(oh), builder.const(ow)])
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    floor_array = builder.address_of(np.full(1, 0.0 if floor is None else floor, x.dtype))
    zero_bias = builder.address_of(np.zeros(max(o, 1), x.dtype))
    bias_pointer = builder.address_of(np.ascontiguousarray(bias)) if bias is not None else zero_bias
    compute = builder.compute
    if groups == c == o and per_group == 1:  # depthwise: one loop over every image's planes
        ptrs, meta = builder.block(5), builder.block(14)
        taps = builder.address_of(np.ascontiguousarray(weight.reshape(c, -1)))
        builder.copy_into(ptrs, [x.pointer, taps, bias_pointer, out.pointer, floor_array], compute)
        builder.copy_into(meta, [builder.const(v) for v in (c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                                                           floor is not None)], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], builder.const(c))
        work = builder.arithmetic("MUL", planes, builder.const(oh * ow * kh * kw // 2))
        compute.append(("SPLIT", builder.const(loop_function("depthwise", dtype)), planes, ptrs, meta, work))
        return out
    if groups > 64:
        raise NotNative("a grouped convolution of many groups")
    from scriptc.native import gemm
    depth, columns, rows = per_group * kh * kw, oh * ow, o // groups
    pointwise = (kh, kw, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0)
    cols = None
    if not pointwise:
        cols = builder.alloc(x.dtype, [builder.const(c * kh * kw * columns)])
        im2col_ptrs = builder.block(2)
        words = im2col.conv2d_meta(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw)
        meta_block = builder.block(len(words))
        for k, word in enumerate(words):
            builder.template[meta_block + k] = word
    image, top, done = builder.register(), builder.label(), builder.label()
    body = builder.label()
    compute.append(("MOV", image, native.ZERO))
    compute.append(("label", top))
    compute.append(("JLT", image, x.dims[0], body))
    compute.append(("JUMP", done))
    compute.append(("label", body))
    x_image, out_image = builder.register(), builder.register()
    compute.append(("ADDR", x_image, x.pointer, image, c * h * w * itemsize))
    compute.append(("ADDR", out_image, out.pointer, image, o * columns * itemsize))
    if cols is not None:
        builder.copy_into(im2col_ptrs, [x_image, cols.pointer], compute)
        compute.append(("KERNEL", builder.const(loop_function("im2col", dtype)), builder.const(c), im2col_ptrs,
                        meta_block))
    source = x_image if cols is None else cols.pointer
    vectors = builder.const(-(-columns // gemm.vector_columns(dtype)))
    work = builder.const(max(1, rows * depth * columns // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    weights = np.ascontiguousarray(weight.reshape(groups, rows, depth))
    for g in range(groups):
        ptrs, meta = builder.block(5), builder.block(5)
        group_source, group_out = builder.register(), builder.register()
        compute.append(("ADDR", group_source, source, builder.const(g), depth * columns * itemsize))
        compute.append(("ADDR", group_out, out_image, builder.const(g), rows * columns * itemsize))
        group_bias = builder.register()
        compute.append(("ADDR", group_bias, bias_pointer, builder.const(g), rows * itemsize))
        builder.copy_into(ptrs, [builder.address_of(weights[g]), group_source, group_out, group_bias, floor_array],
                          compute)
        for k, value in enumerate((rows, depth, columns, floor is not None, 1 if bias is not None else 0)):
            builder.template[meta + k] = value
        compute.append(("SPLIT", builder.const(loop_function("gemm", dtype)), vectors, ptrs, meta, work))
    compute.append(("ADD", image, image, native.ONE))
    compute.append(("JUMP", top))
    compute.append(("label", done))
    return out


def _conv2d(builder: _Builder, node, args, recorded):
    return [_convolution(builder, args, recorded[node.inputs[0]], None)]


def _group(builder: _Builder, node, args, recorded, step: GroupStep):
    """A FusionGroup: its head, then the kernel the recorded call ran, its launch in registers."""
    concrete = [recorded[v] for v in node.inputs]
    found = step.variant_for(concrete)
    if found is None:
        raise NotNative("a group that ran no kernel")
    variant, shape = found
    spec = variant.spec
    if spec.notes.get("then") is not None or any(
            variant.scalar_dtypes.get(i) is not None and i not in dict(variant.fixed_reads) for i in spec.used_inputs):
        raise NotNative("a group whose kernel the program cannot launch")
    syms = list(args)
    if variant.head is not None:
        sources = [syms[p] if p is not None else _sym_of_value(builder, c, [], None) for p, c in variant.head_sources]
        if variant.head.name == "matmul":
            syms.append(_product(builder, _dense(builder, sources[0]), _dense(builder, sources[1])))
        elif variant.head.name == "conv2d":
            floor = spec.head_floor if variant.head_is_result else None
            syms.append(_convolution(builder, sources, recorded[node.inputs[variant.head_sources[0][0]]], floor))
            if variant.head_is_result:
                return [syms[-1]]  # (the products applied the group's ReLU as they stored)
        else:
            raise NotNative(f"a {variant.head.name} head")
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


# The fusion heads a segment program runs (its lowering of each: _product, _convolution).
HEADS = ("matmul", "conv2d")

LOWERINGS = {
    "view": _view, "reshape": _view, "flatten": _flatten, "unsqueeze": _unsqueeze, "contiguous": _contiguous_op,
    "size": _size, "dim": _dim, "numel": _numel, "chunk": _chunk, "matmul": _matmul,
    "zeros": _zeros(0), "new_zeros": _zeros(1), "zeros_like": _zeros(None), "split": _split,
    "cat": _join(stack=False), "stack": _join(stack=True), "max_pool2d": _pool(0), "avg_pool2d": _pool(1),
    "conv2d": _conv2d,
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
        first = next((n for n in node.blocks[0] if n.op != "prim::Constant"), None)
        head = ops.OPS.get(first.op) if first is not None else None
        return head is None or not head.fusion_head or head.name in HEADS
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


