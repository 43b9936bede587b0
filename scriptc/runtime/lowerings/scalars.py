"""Lowerings of sizes, integer arithmetic and comparisons, lists and tuples, and a raise: what a
segment program computes in registers."""

from __future__ import annotations

from scriptc.native import program as native

from ..program_values import (Accumulator, Builder, BuiltList, Condition, constant_of, IntValue, int_register, NotNative,
                              Pieces, TensorValue, tensor_of)


def _size(builder: Builder, node, args, recorded):
    x, dim = tensor_of(args[0]), constant_of(args[1])
    return [IntValue(x.dims[dim % x.rank])]


def _sizes(builder: Builder, node, args, recorded):
    return [[IntValue(d) for d in tensor_of(args[0]).dims]]


def _dtype(builder: Builder, node, args, recorded):
    tensor_of(args[0])
    return [recorded[node.output]]  # (the signature fixes the dtype: the recorded call's is every call's)


def _copy_list(builder: Builder, node, args, recorded):
    if not isinstance(args[0], list):
        raise NotNative("a copy of something that is not a list")
    return [list(args[0])]


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
    return [BuiltList(args)]


def _tuple(builder: Builder, node, args, recorded):
    return [tuple(args)]


def _unpack(builder: Builder, node, args, recorded):
    items = args[0]
    if not isinstance(items, (list, tuple)) or len(items) != len(node.outputs):
        raise NotNative("an unpack of something that is not a list of its length")
    return list(items)


def _raise(builder: Builder, node, args, recorded):
    """Refuse the call: the steps run it, and raise the user's error."""
    builder.shape.append(("EQ", native.ZERO, native.ONE))
    return []


def _comparison(op: str, compare):
    def lower(builder: Builder, node, args, recorded):
        a, b = args
        if not any(_symbolic(v) for v in (a, b)):  # (ints, bools, dtypes, strings: as the steps compare them)
            return [compare(a, b)]
        if isinstance(a, list) and isinstance(b, list) and op in ("eq", "ne"):  # (a size list)
            if len(a) != len(b):
                return [op == "ne"]
            if not all(isinstance(v, IntValue) or type(v) is int for v in a + b):
                raise NotNative("a comparison of lists that are not of ints")
            return [Condition(op, tuple(int_register(builder, v) for v in a),
                              tuple(int_register(builder, v) for v in b))]
        if not all(isinstance(v, IntValue) or type(v) is int for v in (a, b)):
            raise NotNative("a comparison of values that are not ints")
        return [Condition(op, int_register(builder, a), int_register(builder, b))]
    return lower


def _symbolic(value) -> bool:
    """Whether a lowered value is known only at run time (or holds such values)."""
    if isinstance(value, (list, tuple)):
        return any(_symbolic(v) for v in value)
    return isinstance(value, (IntValue, TensorValue, Condition, Pieces, Accumulator))


NEGATION = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}


def negated(condition: Condition) -> Condition:
    return Condition(NEGATION[condition.op], condition.a, condition.b)


def require(builder: Builder, condition: Condition, truth: bool) -> None:
    """Checks that refuse the call unless `condition` is `truth` (the steps then run the other branch:
    a raise, with the user's message)."""
    op, a, b = (condition if truth else negated(condition)).op, condition.a, condition.b
    if isinstance(a, tuple):  # (size lists: only their equality is checked)
        if op != "eq":
            raise NotNative("a check that two size lists differ")
        for x, y in zip(a, b):
            builder.equal(x, y)
        return
    if op in ("gt", "ge"):
        op, a, b = {"gt": "lt", "ge": "le"}[op], b, a
    if op == "eq":
        builder.equal(a, b)
    elif op == "ne":
        builder.nonzero(builder.arithmetic("SUB", a, b))
    else:  # a < b (a <= b: a < b + 1): b - a > 0
        if op == "le":
            b = builder.arithmetic("ADD", b, native.ONE)
        builder.nonzero(builder.arithmetic("MAX", native.ZERO, builder.arithmetic("SUB", b, a)))
