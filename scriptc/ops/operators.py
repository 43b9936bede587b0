"""Python's operators and the ops they mean: THE operator table that eager tensors (bindings.py),
tracing (jit/trace.py) and scripting (jit/frontend) read.

`tensor` names the op-table op `a <op> b` runs when a tensor takes part; `scalar` the base name of
the Python-value ops (kind SCALAR: `add.scalar`, `add.str`, `add.list`, ...) for everything else.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Operator:
    symbol: str                 # Python's spelling: "+", "//", "<<", "<="
    dunder: str                 # __add__ (with __radd__ and __iadd__ for binary operators)
    tensor: str | None          # the tensor op
    scalar: str | None          # base name of the Python-value ops
    function: Callable          # the operator on Python values (operator.add)
    commutative: bool = False   # a + b == b + a: a tensor on the right stays the op's first argument
    flipped: str | None = None  # comparisons: the operator with its operands swapped (a < b is b > a)


def _table(*operators: Operator) -> dict[str, Operator]:
    return {op.symbol: op for op in operators}


BINARY = _table(
    Operator("+", "add", "add", "add", operator.add, commutative=True),
    Operator("-", "sub", "sub", "sub", operator.sub),
    Operator("*", "mul", "mul", "mul", operator.mul, commutative=True),
    Operator("/", "truediv", "div", "div", operator.truediv),
    Operator("//", "floordiv", "floor_divide", "floordiv", operator.floordiv),
    Operator("%", "mod", "remainder", "mod", operator.mod),
    Operator("**", "pow", "pow", "pow", operator.pow),
    Operator("@", "matmul", "matmul", None, operator.matmul),
    Operator("&", "and", "bitwise_and", "bitwise_and", operator.and_, commutative=True),
    Operator("|", "or", "bitwise_or", "bitwise_or", operator.or_, commutative=True),
    Operator("^", "xor", "bitwise_xor", "bitwise_xor", operator.xor, commutative=True),
    Operator("<<", "lshift", "bitwise_left_shift", "lshift", operator.lshift),
    Operator(">>", "rshift", "bitwise_right_shift", "rshift", operator.rshift),
)

COMPARE = _table(
    Operator("<", "lt", "lt", "lt", operator.lt, flipped=">"),
    Operator("<=", "le", "le", "le", operator.le, flipped=">="),
    Operator(">", "gt", "gt", "gt", operator.gt, flipped="<"),
    Operator(">=", "ge", "ge", "ge", operator.ge, flipped="<="),
    Operator("==", "eq", "eq", "eq", operator.eq, flipped="=="),
    Operator("!=", "ne", "ne", "ne", operator.ne, flipped="!="),
)

UNARY = _table(
    Operator("-", "neg", "neg", "neg", operator.neg),
    Operator("~", "invert", "bitwise_not", "invert", operator.invert),
    Operator("+", "pos", None, None, operator.pos),
)

# Integer arithmetic that tracing records on sizes (x.size(0) // 2): closed over ints.
INT_ARITHMETIC = tuple(BINARY[s] for s in ("+", "-", "*", "//", "%"))
