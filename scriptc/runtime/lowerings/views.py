"""Lowerings that lay out memory: views (view, reshape, flatten, (un)squeeze, transpose, select),
copies, chunk/split into views, cat/stack, zeros and embedding's row gather."""

from __future__ import annotations

import numpy as np

from scriptc.native import program as native

from . import lists  # (split and cat of the lists it keeps symbolically)
from ..program_values import (Accumulator, NotNative, Builder, constant_of, contiguous_of, dense, IntValue, int_register,
                              TensorValue, copied, tensor_of, value_of)


def _view(builder: Builder, node, args, recorded):
    x, sizes = tensor_of(args[0]), args[1]
    if x.strides is not None:
        if node.op == "view":
            raise NotNative("a view of a strided view")  # (whether it is one depends on the strides: the steps)
        x = copied(builder, x)  # reshape of what no view can be: a copy
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
    if x.strides is None and x.root is not None and x.root[0] == "constant" and \
            tuple(builder.known(d) for d in x.dims) == x.root[1].shape:
        # (a frozen weight transposed, `x @ w.t()`: the transposed constant, which products take as
        # frozen weights, instead of a strided view they would copy on every call)
        return [value_of(builder, np.ascontiguousarray(x.root[1].transpose(order)), [], None)]
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


def _narrow(builder: Builder, node, args, recorded):
    """x.narrow(dim, start, length): a view (its range checked inside the dim, else the steps raise)."""
    x, dim, start, length = tensor_of(args[0]), constant_of(args[1]), args[2], args[3]
    if x.rank == 0 or type(start) is int and start < 0:
        raise NotNative("a narrow of a 0-dim tensor or from the end")
    dim %= x.rank
    start, length = int_register(builder, start), int_register(builder, length)
    end = builder.arithmetic("ADD", start, length)
    _in_range(builder, start, builder.arithmetic("ADD", x.dims[dim], native.ONE))
    _in_range(builder, end, builder.arithmetic("ADD", x.dims[dim], native.ONE))
    builder.nonzero(builder.arithmetic("MAX", native.ZERO, builder.arithmetic("ADD", length, native.ONE)))
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    pointer = builder.register()
    builder.compute.append(("ADDR", pointer, x.pointer, builder.arithmetic("MUL", start, strides[dim]),
                            x.dtype.itemsize))
    dims = list(x.dims)
    dims[dim] = length
    return [TensorValue(x.dtype, dims, pointer, x.buffer, list(strides), x.root)]


def _dropout(builder: Builder, node, args, recorded):
    """dropout out of training: its input."""
    p, train = constant_of(args[1]), constant_of(args[2])
    if train is not False or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise NotNative("dropout in training")
    return [args[0]]


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


def _same_tensor(builder: Builder, node, args, recorded):
    """detach: the runtime computes no gradients, so its input as it is."""
    return [args[0]]


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
    if lists.read_by_index(node.outputs[0]):  # (a scripted `for x_t in x.split(1, dim)`: any length)
        return [lists.pieces(builder, x, int_register(builder, size), dim)]
    count = len(recorded[node.outputs[0]])
    recorded_size = recorded[node.inputs[1]] if isinstance(size, IntValue) else size
    if type(recorded_size) is not int or recorded_size <= 0 or recorded[node.inputs[0]].shape[dim] != count * \
            recorded_size:
        raise NotNative("a split into pieces of other sizes")
    size = int_register(builder, size)
    builder.equal(x.dims[dim], builder.arithmetic("MUL", size, builder.const(count)))
    return [_pieces(builder, x, dim, size, count)]


def _join(stack: bool):
    """cat (stack: along a new dim) of contiguous tensors of one dtype: each copied in as rows, but
    the parts whose producers wrote them in place (a cat planned by program_memory.plan_concatenations)."""
    def lower(builder: Builder, node, args, recorded):
        tensors, dim = args[0], constant_of(args[1])
        if isinstance(tensors, Accumulator):
            return [lists.joined(builder, tensors, dim, stack)]
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
        joined = None if stack else builder.concatenations.get(id(node))
        placed = {} if joined is None or joined.result is None else joined.placed
        if placed:
            out = joined.result
            for d, size in zip(dims, out.dims):
                builder.equal(d, size)
        else:
            out = builder.alloc(first.dtype, dims)
        rows = builder.product(dims[:dim])
        itemsize = builder.const(first.dtype.itemsize)
        out_row = builder.arithmetic("MUL", builder.product(dims[dim:]), itemsize)
        offset = native.ZERO
        for k, t in enumerate(parts):
            row = builder.arithmetic("MUL", builder.product(t.dims[dim:]), itemsize)
            if placed.get(k) is t:  # (its producer wrote it there)
                offset = builder.arithmetic("ADD", offset, row)
                continue
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
