"""The native lowering of each op a segment program runs (LOWERINGS): views, sizes and integer
arithmetic, zeros, split and cat, pooling, products, convolutions, and FusionGroups - each writes
its records through the builder (program_values.py) and returns its outputs' symbolic values."""

from __future__ import annotations

import numpy as np

from scriptc import ops
from scriptc.native import program as native
from scriptc.native.blas import cblas_addresses
from scriptc.native.geometry import average_divisors, conv_geometry, pool_geometry
from scriptc.native.heads import GEMM_MIN_ROWS, GEMM_SPLIT_MIN, MATVEC_MIN_COLUMNS, MATVEC_ROWS, gemm_runs
from scriptc.native.loops import loop_function

from .groups import PARALLEL_MIN_ELEMENTS, GroupStep
from .program_values import (NotNative, Builder, constant_of, constant_array, contiguous_of, dense, IntValue,
                             int_register, value_of, TensorValue, tensor_of)


def _view(builder: Builder, node, args, recorded):
    x, sizes = tensor_of(args[0]), args[1]
    if x.strides is not None:
        if node.op == "view":
            raise NotNative("a view of a strided view")  # (whether it is one depends on the strides: the steps)
        x = _copied(builder, x)  # reshape of what no view can be: a copy
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
            dims.append(int_register(builder, size))
    if unknown is not None:
        known = builder.product([d for d in dims if d is not None])
        dims[unknown] = builder.arithmetic("DIV", count, known)
    builder.equal(builder.product(dims), count)
    return [TensorValue(x.dtype, dims, x.pointer, x.buffer, root=x.root)]


def _copied(builder: Builder, x: TensorValue) -> TensorValue:
    """A contiguous copy of a strided view."""
    out = builder.alloc(x.dtype, x.dims)
    dims, strides = builder.block(x.rank), builder.block(x.rank)
    builder.copy_into(dims, x.dims, builder.shape)
    builder.copy_into(strides, x.strides, builder.shape)
    builder.compute.append(("STRIDED", out.pointer, x.pointer, x.rank, dims, strides, x.dtype.itemsize))
    return out


def _transpose(builder: Builder, node, args, recorded):
    """transpose(x, a, b), permute(x, dims), t(x): views with their dims and strides reordered."""
    x = tensor_of(args[0])
    if node.op == "permute":
        order = [d % x.rank for d in constant_of(args[1])]
    else:
        a, b = (constant_of(args[1]), constant_of(args[2])) if node.op == "transpose" else (0, 1)
        order = list(range(x.rank))
        if x.rank:
            a, b = a % x.rank, b % x.rank
            order[a], order[b] = order[b], order[a]
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    return [TensorValue(x.dtype, [x.dims[d] for d in order], x.pointer, x.buffer, [strides[d] for d in order],
                        x.root)]


def _flatten(builder: Builder, node, args, recorded):
    x = contiguous_of(args[0])
    start, end = (constant_of(a) for a in args[1:3])
    rank = x.rank
    if rank == 0:
        return [TensorValue(x.dtype, [native.ONE], x.pointer, x.buffer, root=x.root)]
    start, end = start % rank, end % rank
    dims = x.dims[:start] + [builder.product(x.dims[start:end + 1])] + x.dims[end + 1:]
    return [TensorValue(x.dtype, dims, x.pointer, x.buffer, root=x.root)]


def _unsqueeze(builder: Builder, node, args, recorded):
    x, dim = tensor_of(args[0]), constant_of(args[1])
    dim = dim % (x.rank + 1)
    strides = None if x.strides is None else x.strides[:dim] + [native.ONE] + x.strides[dim:]
    return [TensorValue(x.dtype, x.dims[:dim] + [native.ONE] + x.dims[dim:], x.pointer, x.buffer, strides, x.root)]


def _squeeze(builder: Builder, node, args, recorded):
    """squeeze of the dims that were 1 in the recorded call (checked: a dim that was not stays)."""
    x, dims = tensor_of(args[0]), constant_of(args[1])
    shape = recorded[node.inputs[0]].shape
    dims = range(x.rank) if dims is None else [dims] if type(dims) is int else dims
    dropped = set()
    for d in dims:
        d %= max(x.rank, 1)
        if shape[d] != 1:
            raise NotNative("a squeeze of a dim that was not 1")
        builder.equal(x.dims[d], native.ONE)
        dropped.add(d)
    keep = [d for d in range(x.rank) if d not in dropped]
    strides = None if x.strides is None else [x.strides[d] for d in keep]
    return [TensorValue(x.dtype, [x.dims[d] for d in keep], x.pointer, x.buffer, strides, x.root)]


def _select(builder: Builder, node, args, recorded):
    """x[..., index, ...] along dim: a view (the index checked inside the dim, else the steps raise)."""
    x, dim, index = tensor_of(args[0]), constant_of(args[1]), args[2]
    if x.rank == 0:
        raise NotNative("a select of a 0-dim tensor")
    dim %= x.rank
    if type(index) is int and index < 0:
        index = IntValue(builder.arithmetic("ADD", x.dims[dim], builder.const(index)))
    position = int_register(builder, index)
    _in_range(builder, position, x.dims[dim])
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    pointer = builder.register()
    builder.compute.append(("ADDR", pointer, x.pointer, builder.arithmetic("MUL", position, strides[dim]),
                            x.dtype.itemsize))
    keep = [d for d in range(x.rank) if d != dim]
    return [TensorValue(x.dtype, [x.dims[d] for d in keep], pointer, x.buffer, [strides[d] for d in keep], x.root)]


def _in_range(builder: Builder, index: int, size: int) -> None:
    """Refuse the call unless 0 <= index < size (a division by zero refuses it)."""
    below = builder.arithmetic("SUB", size, index)  # > 0 when index < size
    builder.nonzero(builder.arithmetic("MAX", native.ZERO, below))
    builder.nonzero(builder.arithmetic("MAX", native.ZERO, builder.arithmetic("ADD", index, native.ONE)))


def _embedding(builder: Builder, node, args, recorded):
    """Rows of a table looked up by int64 indices (one out of range refuses the call: the steps raise)."""
    indices, table = dense(builder, args[0]), dense(builder, args[1])
    if indices.dtype != np.int64 or table.rank != 2:
        raise NotNative("an embedding of other than int64 indices into a matrix")
    out = builder.alloc(table.dtype, indices.dims + [table.dims[1]])
    row = builder.arithmetic("MUL", table.dims[1], builder.const(table.dtype.itemsize))
    builder.compute.append(("GATHER", out.pointer, table.pointer, table.dims[0], indices.pointer,
                            builder.product(indices.dims), row))
    return [out]


def _contiguous_op(builder: Builder, node, args, recorded):
    return [contiguous_of(args[0])]


def _size(builder: Builder, node, args, recorded):
    x, dim = tensor_of(args[0]), constant_of(args[1])
    return [IntValue(x.dims[dim % x.rank])]


def _dim(builder: Builder, node, args, recorded):
    return [tensor_of(args[0]).rank]


def _numel(builder: Builder, node, args, recorded):
    return [IntValue(builder.product(tensor_of(args[0]).dims))]


def _integer(op: str, fold):
    def lower(builder: Builder, node, args, recorded):
        a, b = args
        if type(a) is int and type(b) is int:
            return [fold(a, b)]
        if not all(isinstance(v, IntValue) or type(v) is int for v in (a, b)):
            raise NotNative("arithmetic on values that are not ints")
        return [IntValue(builder.arithmetic(op, int_register(builder, a), int_register(builder, b)))]
    return lower


def _range_length(builder: Builder, node, args, recorded):
    """A for loop's trip count, max(0, ceil((stop - start) / step)), for a step known when planning."""
    start, stop, step = args
    if type(step) is not int or step <= 0:
        raise NotNative("a range whose step is not a positive constant")
    if type(start) is int and type(stop) is int:
        return [len(range(start, stop, step))]
    sub, add, div, most = (_integer(op, fold) for op, fold in (
        ("SUB", lambda a, b: a - b), ("ADD", lambda a, b: a + b), ("DIV", lambda a, b: a // b), ("MAX", max)))
    (span,) = sub(builder, node, [stop, start], recorded)
    if step != 1:  # a negative span stays <= 0 whether DIV floors or truncates: MAX makes it 0
        (span,) = div(builder, node, [add(builder, node, [span, step - 1], recorded)[0], step], recorded)
    return most(builder, node, [span, 0], recorded)


def _list(builder: Builder, node, args, recorded):
    return [list(args)]


def _tuple(builder: Builder, node, args, recorded):
    return [tuple(args)]


def _unpack(builder: Builder, node, args, recorded):
    items = args[0]
    if not isinstance(items, (list, tuple)) or len(items) != len(node.outputs):
        raise NotNative("an unpack of something that is not a list of its length")
    return list(items)


def _pieces(builder: Builder, x: TensorValue, dim: int, size: int, count: int) -> list[TensorValue]:
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
        out.append(TensorValue(x.dtype, dims, pointer, x.buffer, list(strides), x.root))
    return out


def _chunk(builder: Builder, node, args, recorded):
    x, chunks, dim = tensor_of(args[0]), constant_of(args[1]), constant_of(args[2])
    dim = dim % x.rank
    if len(recorded[node.outputs[0]]) != chunks:
        raise NotNative("a chunk into fewer pieces than asked")
    size = builder.arithmetic("DIV", x.dims[dim], builder.const(chunks))
    builder.equal(builder.arithmetic("MUL", size, builder.const(chunks)), x.dims[dim])
    return [_pieces(builder, x, dim, size, chunks)]


def _split(builder: Builder, node, args, recorded):
    """split by a size (an int known at run time too): as many pieces of it as the recorded call made,
    which must fill the dim exactly (checked)."""
    x, size, dim = tensor_of(args[0]), args[1], constant_of(args[2])
    dim = dim % x.rank
    count = len(recorded[node.outputs[0]])
    recorded_size = recorded[node.inputs[1]] if isinstance(size, IntValue) else size
    if type(recorded_size) is not int or recorded_size <= 0 or recorded[node.inputs[0]].shape[dim] != count * \
            recorded_size:
        raise NotNative("a split into pieces of other sizes")
    size = int_register(builder, size)
    builder.equal(x.dims[dim], builder.arithmetic("MUL", size, builder.const(count)))
    return [_pieces(builder, x, dim, size, count)]


def _join(stack: bool):
    """cat (stack: along a new dim) of contiguous tensors of one dtype: each copied in as rows."""
    def lower(builder: Builder, node, args, recorded):
        tensors, dim = args[0], constant_of(args[1])
        if not isinstance(tensors, list) or not tensors:
            raise NotNative("a cat of something that is not a list of tensors")
        parts = [tensor_of(t) for t in tensors]
        first = parts[0]
        rank = first.rank + stack
        dim = dim % rank
        if any(t.dtype != first.dtype or t.rank != first.rank for t in parts):
            raise NotNative("a cat of tensors of several dtypes or ranks")
        if stack:
            parts = [TensorValue(t.dtype, t.dims[:dim] + [native.ONE] + t.dims[dim:], t.pointer, t.buffer,
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


def _sum(builder: Builder, registers: list[int]) -> int:
    total = registers[0]
    for r in registers[1:]:
        total = builder.arithmetic("ADD", total, r)
    return total


def _pool(mode: int | None):
    """max_pool2d / avg_pool2d with the pool loop: the image size the recorded call had (checked);
    mode None: adaptive_avg_pool2d to sizes that divide the image's (an average pool of that kernel)."""
    def lower(builder: Builder, node, args, recorded):
        from scriptc.native import pool
        kind = mode
        x = contiguous_of(args[0])
        constants = [constant_of(a) for a in args[1:]]
        concrete = recorded[node.inputs[0]]
        if x.rank != 4 or x.dtype.name not in pool.FUNCTIONS:
            raise NotNative("pooling that is not of 4-D floats")
        if kind is None:
            sizes = constants[0] if isinstance(constants[0], (list, tuple)) else [constants[0]] * 2
            h, w = concrete.shape[2:]
            out = [h if s is None else s for s in sizes]
            if len(out) != 2 or h % out[0] or w % out[1]:
                raise NotNative("an adaptive pool to sizes that do not divide the image's")
            kernel = [h // out[0], w // out[1]]
            constants = [kernel, kernel, [0, 0], False, True, None]
            kind = pool.AVERAGE
        if kind == pool.MAX:
            kernel_size, stride, padding, dilation, ceil_mode = constants
            geometry = pool_geometry(concrete.shape, kernel_size, stride, padding, dilation, ceil_mode)
            divisors = builder.const(0)
        else:
            kernel_size, stride, padding, ceil_mode, include_pad, divisor = constants
            geometry = pool_geometry(concrete.shape, kernel_size, stride, padding, 1, ceil_mode)
            table = None if geometry is None else average_divisors(geometry, x.dtype, include_pad, divisor)
            if table is None:
                raise NotNative("pooling arguments the op refuses")
            divisors = builder.address_of(table)
        if geometry is None:
            raise NotNative("pooling arguments the op refuses")
        builder.equal(x.dims[2], builder.const(geometry[0]))
        builder.equal(x.dims[3], builder.const(geometry[1]))
        out = builder.alloc(x.dtype, x.dims[:2] + [builder.const(geometry[2]), builder.const(geometry[3])])
        ptrs, meta = builder.block(3), builder.block(13)
        builder.copy_into(ptrs, [x.pointer, out.pointer, divisors], builder.compute)
        builder.copy_into(meta, [builder.const(g) for g in geometry + [kind]], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], x.dims[1])
        builder.compute.append(("KERNEL", builder.const(loop_function("pool", x.dtype.name)), planes, ptrs, meta))
        return [out]
    return lower


def _zeros(size_argument: int | None):
    """zeros and its kin: the dims of the size list argument `size_argument`, or of the tensor argument
    0 (zeros_like) when it is None; the dtype the recorded call's result has."""
    def lower(builder: Builder, node, args, recorded):
        if size_argument is None:
            dims = list(tensor_of(args[0]).dims)
        else:
            sizes = args[size_argument]
            if not isinstance(sizes, list):
                raise NotNative("sizes that are not a list")
            dims = [int_register(builder, s) for s in sizes]
        out = builder.alloc(recorded[node.outputs[0]].dtype, dims)
        builder.compute.append(("ZERO", out.pointer, builder.arithmetic("MUL", out.buffer.count,
                                                                        builder.const(out.dtype.itemsize))))
        return [out]
    return lower


def _matmul(builder: Builder, node, args, recorded):
    return [_product(builder, dense(builder, args[0]), dense(builder, args[1]))]


def _product(builder: Builder, a: TensorValue, b: TensorValue) -> TensorValue:
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


def _convolution(builder: Builder, args: list, x_value: np.ndarray, floor: float | None) -> TensorValue:
    """conv2d of a batch of any size, the image size and channels the recorded call had (checked):
    the depthwise loop for a depthwise convolution, else per image its columns (the image itself for
    a 1x1 convolution of stride 1, im2col's otherwise) times each group's weights by the compiled GEMM,
    which adds the bias and applies the floor (a fused ReLU) as it stores."""
    from scriptc.native import im2col

    x = dense(builder, args[0])
    weight = constant_array(args[1])
    bias = None if args[2] is None else constant_array(args[2])
    stride, padding, dilation, groups = (constant_of(a) for a in args[3:7])
    if x.rank != 4 or weight.dtype != x.dtype or x.dtype.name not in im2col.FUNCTIONS or not gemm_runs():
        raise NotNative("a convolution not of 4-D floats of one dtype, or no compiled GEMM")
    geometry = conv_geometry(x_value.shape, weight.shape, stride, padding, dilation, groups)
    if geometry is None:
        raise NotNative("convolution arguments the op refuses")
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
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


def _conv2d(builder: Builder, node, args, recorded):
    return [_convolution(builder, args, recorded[node.inputs[0]], None)]


def lower_group(builder: Builder, node, args, recorded, step: GroupStep):
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
        sources = [syms[p] if p is not None else value_of(builder, c, [], None) for p, c in variant.head_sources]
        if variant.head.name == "matmul":
            syms.append(_product(builder, dense(builder, sources[0]), dense(builder, sources[1])))
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
        t = tensor_of(syms[i])
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
    if merge is not None and any(isinstance(s, TensorValue) and s.strides is not None for s in syms):
        raise NotNative("a reduction over merged dims of a strided view")
    tail = spec.tail

    def merged(dims: list[int]) -> list[int]:
        if merge is None:
            return list(dims)
        return dims[:merge[0]] + [builder.product(dims[merge[0]:merge[1] + 1])] + dims[merge[1] + 1:]

    kernel_dims = merged(iteration)
    tensors = [i for i, inp in enumerate(spec.inputs) if inp.kind == "tensor"]
    # Views (chunks of a product's result) are read in place, by rows with their strides.
    flat = variant.flat and not any(isinstance(syms[i], TensorValue) and syms[i].strides is not None
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
            builder.compute.append(("MOV", ptrs + i, tensor_of(syms[i]).pointer))
    for j, out in enumerate(outputs):
        builder.compute.append(("MOV", ptrs + len(spec.inputs) + j, out.pointer))
    function = builder.const(kernel.address)
    builder.compute.append(("SPLIT", function, total, ptrs, meta, count))
    return outputs


# The fusion heads a segment program runs (its lowering of each: _product, _convolution).


def _raise(builder: Builder, node, args, recorded):
    """Refuse the call: the steps run it, and raise the user's error."""
    builder.shape.append(("EQ", native.ZERO, native.ONE))
    return []


def _comparison(compare):
    def lower(builder: Builder, node, args, recorded):
        a, b = args
        if type(a) not in (int, bool) or type(b) not in (int, bool):
            raise NotNative("a comparison of values known only at run time")
        return [compare(a, b)]
    return lower


HEADS = ("matmul", "conv2d")

LOWERINGS = {
    "view": _view, "reshape": _view, "flatten": _flatten, "unsqueeze": _unsqueeze, "contiguous": _contiguous_op,
    "size": _size, "dim": _dim, "numel": _numel, "chunk": _chunk, "matmul": _matmul,
    "zeros": _zeros(0), "new_zeros": _zeros(1), "zeros_like": _zeros(None), "split": _split,
    "cat": _join(stack=False), "stack": _join(stack=True), "max_pool2d": _pool(0), "avg_pool2d": _pool(1),
    "adaptive_avg_pool2d": _pool(None), "conv2d": _conv2d, "squeeze": _squeeze, "select": _select,
    "transpose": _transpose, "permute": _transpose, "t": _transpose,
    "embedding": _embedding,
    "prim::ListConstruct": _list, "prim::TupleConstruct": _tuple, "prim::ListUnpack": _unpack,
    "prim::TupleUnpack": _unpack,
    "add.scalar": _integer("ADD", lambda a, b: a + b), "sub.scalar": _integer("SUB", lambda a, b: a - b),
    "mul.scalar": _integer("MUL", lambda a, b: a * b), "floordiv.scalar": _integer("DIV", lambda a, b: a // b),
    "max.scalar": _integer("MAX", max), "range_length.int": _range_length,
    "eq.scalar": _comparison(lambda a, b: a == b), "ne.scalar": _comparison(lambda a, b: a != b),
    "lt.scalar": _comparison(lambda a, b: a < b), "le.scalar": _comparison(lambda a, b: a <= b),
    "gt.scalar": _comparison(lambda a, b: a > b), "ge.scalar": _comparison(lambda a, b: a >= b),
    "prim::RaiseException": _raise,
}


# Lowerings that only rename memory or do integer arithmetic: a run of nothing but these is no segment
# (a program call costs more than their steps).
CHEAP = {"view", "reshape", "flatten", "unsqueeze", "squeeze", "contiguous", "size", "dim", "numel", "chunk", "split",
         "select", "transpose", "permute", "t",
         "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack", "prim::TupleUnpack", "add.scalar",
         "sub.scalar", "mul.scalar", "floordiv.scalar", "max.scalar", "range_length.int", "eq.scalar", "ne.scalar", "lt.scalar",
         "le.scalar", "gt.scalar", "ge.scalar", "prim::RaiseException", "prim::If", "prim::Loop"}


def raises(block) -> bool:
    """Whether the block ends in a raise: a program only checks that it is not taken (what comes
    before the raise, such as its message, is the interpreter's to compute)."""
    return block.last is not None and block.last.op == "prim::RaiseException"


def runs_natively(node) -> bool:
    """Whether a node may be part of a segment: an op the interpreter runs, a FusionGroup whose head
    (if any) it runs, or an If (the signature must decide its condition) or a Loop of such nodes."""
    if node.op in ("prim::If", "prim::Loop"):
        return all(raises(block) or all(inner.op == "prim::Constant" or runs_natively(inner) for inner in block)
                   for block in node.blocks)
    if node.op == "prim::FusionGroup":
        first = next((n for n in node.blocks[0] if n.op != "prim::Constant"), None)
        head = ops.OPS.get(first.op) if first is not None else None
        return head is None or not head.fusion_head or head.name in HEADS
    return node.op in LOWERINGS
