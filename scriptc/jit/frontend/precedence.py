"""Python's operator precedence: the parser hands over an expression as one flat sequence of
operands, prefix operators and binary operators; `order` builds the AST nodes from it."""

from __future__ import annotations

from . import ast

# Loosest first. `not` and the unary + - ~ are prefix operators; `**` is right-associative and binds
# its left operand tighter than a unary minus (-x ** 2 is -(x ** 2)).
_BINARY = {"or": 1, "and": 2}
_BINARY.update({op: 4 for op in ("<", ">", "==", ">=", "<=", "<>", "!=", "in", "not in", "is", "is not")})
_BINARY.update({"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "@": 10, "/": 10, "%": 10,
                "//": 10, "**": 12})
_COMPARISON = 4
_NOT = 3
_UNARY = 11
_POWER = 12


class Prefix:
    """A prefix operator in the sequence."""

    __slots__ = ("op", "line", "col")

    def __init__(self, op: str, line: int, col: int):
        self.op, self.line, self.col = op, line, col


class Infix(Prefix):
    """A binary operator in the sequence ('not in' and 'is not' are one)."""

    __slots__ = ()


def position(item) -> tuple[int, int]:
    """(line, col) of an AST node or a token."""
    if isinstance(item, ast.Node):
        return item.line, item.col
    return item.line, item.column


def order(items: list) -> ast.Node:
    """The expression a flat [prefix..., operand, infix, prefix..., operand, ...] sequence spells."""
    return _Climber(items).expression(0)


class _Climber:
    """Precedence climbing, consuming the sequence from the left."""

    def __init__(self, items: list):
        self.items = items
        self.at = 0

    def next_infix(self):
        return self.items[self.at] if self.at < len(self.items) else None

    def expression(self, min_precedence: int):
        left = self.operand()
        while (op := self.next_infix()) is not None:
            precedence = _BINARY[op.op]
            if precedence < min_precedence:
                break
            self.at += 1
            if precedence == _COMPARISON:
                left = self.comparison(left, op.op)
            elif op.op in ("and", "or"):
                values = [left, self.expression(precedence + 1)]
                while (following := self.next_infix()) is not None and following.op == op.op:
                    self.at += 1
                    values.append(self.expression(precedence + 1))
                left = ast.BoolOp(left.line, left.col, op.op, values)
            else:
                right = self.expression(_POWER if op.op == "**" else precedence + 1)
                left = ast.BinOp(left.line, left.col, op.op, left, right)
        return left

    def comparison(self, left, first: str):
        ops, comparators = [first], [self.expression(_COMPARISON + 1)]
        while (following := self.next_infix()) is not None and _BINARY[following.op] == _COMPARISON:
            self.at += 1
            ops.append(following.op)
            comparators.append(self.expression(_COMPARISON + 1))
        return ast.Compare(left.line, left.col, left, ["!=" if op == "<>" else op for op in ops], comparators)

    def operand(self):
        item = self.items[self.at]
        self.at += 1
        if not isinstance(item, Prefix):
            return item
        if item.op == "await":
            self.expression(_POWER + 1)
            return ast.Unsupported(item.line, item.col, "await is not supported")
        operand = self.expression(_NOT if item.op == "not" else _UNARY)
        return ast.UnaryOp(item.line, item.col, item.op, operand)
