"""Lowerings of the lists a scripted recurrence keeps: a split into as many pieces as the input holds
(`for x_t in input.split(1, dim=1)`: the pieces read by the loop's counter), and the list of outputs
a for loop appends to once per trip, joined by cat or stack after the loop. Both are symbolic
(program_values.Pieces, Accumulator): a piece is a view at an offset the counter gives, and the
outputs are stacked in one buffer as they come - so a program serves every sequence length.
Also the bool logic and Optional refinements of an LSTMCell's argument checks."""

from __future__ import annotations

from scriptc.ir.graph import Node

from ..program_values import (Accumulator, Builder, BuiltList, Condition, IntValue, NotNative, Pieces, TensorValue, copied,
                              dense, int_register, tensor_of)
from . import views
from .scalars import negated


def read_by_index(value) -> bool:
    """Whether a list value is only read by getitem.list and len.list (so it needs no length when
    the program is written)."""
    uses = list(value.uses)
    return bool(uses) and all(isinstance(u.user, Node) and u.user.op in ("getitem.list", "len.list") and u.index == 0
                              for u in uses)


def pieces(builder: Builder, x: TensorValue, size: int, dim: int) -> Pieces:
    """x split along dim into pieces of `size` (a register) elements, which must fill the dim exactly
    (checked: a ragged last piece, or an empty dim, refuses the call and the steps run it)."""
    builder.nonzero(size)
    count = builder.arithmetic("DIV", x.dims[dim], size)
    builder.equal(builder.arithmetic("MUL", count, size), x.dims[dim])
    builder.nonzero(count)
    return Pieces(x, dim, size, count)


def _getitem(builder: Builder, node, args, recorded):
    items, index = args
    if isinstance(items, (list, tuple)):
        if type(index) is not int or not -len(items) <= index < len(items):
            raise NotNative("a list read at an index known only at run time, or outside it")
        return [items[index]]
    if not isinstance(items, Pieces):
        raise NotNative("an index into something that is not a list")
    if type(index) is int and index < 0:
        index = IntValue(builder.arithmetic("ADD", items.count, builder.const(index)))
    position = int_register(builder, index)
    views._in_range(builder, position, items.count)
    x = items.tensor
    strides = x.strides if x.strides is not None else builder.contiguous_strides(x.dims)
    first = builder.arithmetic("MUL", position, items.size)
    pointer = builder.register()
    builder.compute.append(("ADDR", pointer, x.pointer, builder.arithmetic("MUL", first, strides[items.dim]),
                            x.dtype.itemsize))
    dims = list(x.dims)
    dims[items.dim] = items.size
    return [TensorValue(x.dtype, dims, pointer, x.buffer, list(strides), x.root)]


def _length(builder: Builder, node, args, recorded):
    items = args[0]
    if isinstance(items, (list, tuple)):
        return [len(items)]
    if isinstance(items, Pieces):
        return [IntValue(items.count)]
    raise NotNative("the length of a list known only at run time")


def _append(builder: Builder, node, args, recorded):
    _add_item(builder, args[0], args[1])
    return [args[0]] * len(node.outputs)


def _extend(builder: Builder, node, args, recorded):
    items = args[1]
    if not isinstance(items, list) or len(items) != 1:
        raise NotNative("an extend by other than a list of one tensor")
    _add_item(builder, args[0], items[0])
    return [args[0]] * len(node.outputs)


def appended_lists(body) -> list:
    """The list values a loop body appends to (append.list, extend.list) at its top level."""
    return [node.inputs[0] for node in body if node.op in ("append.list", "extend.list")]


def _add_item(builder: Builder, accumulator: Accumulator | BuiltList, item) -> None:
    """Copy `item` into the accumulator's place for this trip (its buffer is allocated here, at the
    loop body's one append, `trips` items long); outside loops, append it to the list."""
    if type(accumulator) is BuiltList and not builder.loop_depth:
        accumulator.append(item)
        return
    if not isinstance(accumulator, Accumulator):
        raise NotNative("an append to a list that is not a for loop's list of outputs")
    if accumulator.appends:
        raise NotNative("more than one append to a list per trip")
    accumulator.appends += 1
    item = dense(builder, tensor_of(item))
    stacked = accumulator.stacked = builder.alloc(item.dtype, [accumulator.trips] + item.dims)
    count = builder.product(item.dims)
    target = builder.register()
    builder.compute.append(("ADDR", target, stacked.pointer, builder.arithmetic("MUL", accumulator.counter, count),
                            item.dtype.itemsize))
    builder.compute.append(("COPY", target, item.pointer,
                            builder.arithmetic("MUL", count, builder.const(item.dtype.itemsize))))


def joined(builder: Builder, accumulator: Accumulator, dim: int, stack: bool) -> TensorValue:
    """cat (stack: along a new dim) of a loop's outputs: the stacked buffer itself (dim 0), else its
    trips moved next to dim by one strided copy."""
    stacked = accumulator.stacked
    if stacked is None:
        raise NotNative("a cat of a list nothing was appended to")
    builder.nonzero(accumulator.trips)  # (torch refuses to cat an empty list: the steps raise)
    items, trips = stacked.dims[1:], accumulator.trips
    if not items and not stack:
        raise NotNative("a cat of 0-dim tensors")
    dim %= len(items) + stack
    if dim == 0 and stack:
        return stacked
    if dim == 0:
        return TensorValue(stacked.dtype, [builder.arithmetic("MUL", trips, items[0])] + items[1:], stacked.pointer,
                           stacked.buffer)
    strides = builder.contiguous_strides(stacked.dims)
    view = TensorValue(stacked.dtype, items[:dim] + [trips] + items[dim:], stacked.pointer, stacked.buffer,
                       strides[1:dim + 1] + [strides[0]] + strides[dim + 1:])
    out = copied(builder, view)
    if stack:
        return out
    dims = items[:dim] + [builder.arithmetic("MUL", trips, items[dim])] + items[dim + 1:]
    return TensorValue(out.dtype, dims, out.pointer, out.buffer)


def _refine(builder: Builder, node, args, recorded):
    return [args[0]]


def _is_none(builder: Builder, node, args, recorded):
    return [args[0] is None]


def _uninitialized(builder: Builder, node, args, recorded):
    return [None]  # (read only on a branch the signature does not take)


def _not(builder: Builder, node, args, recorded):
    value = args[0]
    if isinstance(value, Condition):
        return [negated(value)]
    if type(value) is not bool:
        raise NotNative("a bool that is not a comparison known only at run time")
    return [not value]


def _or(builder: Builder, node, args, recorded):
    a, b = args
    if type(a) is bool:
        return [True if a else b]
    if type(b) is bool:
        return [True if b else a]
    raise NotNative("an or of two bools known only at run time")
