"""Scalar expressions: the elementwise meaning of a pointwise op, shared by both codegens.

A pointwise op's `scalar` function is called with one `Expr` per argument and
returns the expression tree of one output element, e.g. gelu's
`0.5 * x * (1 + erf(x * 0.7071067811865476))`. The LLVM and CUDA backends
each lower the small primitive set below once; `evaluate` runs a tree on
arrays, which the op-table test uses to check it against the eager kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Primitive operations and their arity. Nothing else may appear in a tree.
UNARY = ("neg", "exp", "log", "sqrt", "tanh", "erf", "abs", "floor", "ceil", "sin", "cos", "not")
BINARY = ("add", "sub", "mul", "div", "pow", "max", "min",
          "lt", "le", "gt", "ge", "eq", "ne", "and", "or")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
# Functions of C's math library (and CUDA's), each with its numpy name: a backend calls the
# library's function of that name (`f`-suffixed in float32), so its accuracy is the library's.
LIBM_UNARY = {"tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
              "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "log1p": "log1p", "expm1": "expm1",
              "trunc": "trunc", "rint": "rint"}
LIBM_BINARY = {"atan2": "arctan2", "fmod": "fmod", "hypot": "hypot", "copysign": "copysign",
               "nextafter": "nextafter"}
LIBM = {**LIBM_UNARY, **LIBM_BINARY}
PRIMITIVES = set(UNARY) | set(BINARY) | set(LIBM) | {"select", "const", "var", "cast"}


@dataclass(frozen=True, eq=False)
class Expr:
    """One node of a scalar expression: `op` over `args`; `value` for const, `index` for var."""

    op: str
    args: tuple["Expr", ...] = ()
    value: Any = None

    def __add__(self, other): return Expr("add", (self, lift(other)))
    def __radd__(self, other): return Expr("add", (lift(other), self))
    def __sub__(self, other): return Expr("sub", (self, lift(other)))
    def __rsub__(self, other): return Expr("sub", (lift(other), self))
    def __mul__(self, other): return Expr("mul", (self, lift(other)))
    def __rmul__(self, other): return Expr("mul", (lift(other), self))
    def __truediv__(self, other): return Expr("div", (self, lift(other)))
    def __rtruediv__(self, other): return Expr("div", (lift(other), self))
    def __pow__(self, other): return Expr("pow", (self, lift(other)))
    def __rpow__(self, other): return Expr("pow", (lift(other), self))
    def __neg__(self): return Expr("neg", (self,))
    def __lt__(self, other): return Expr("lt", (self, lift(other)))
    def __le__(self, other): return Expr("le", (self, lift(other)))
    def __gt__(self, other): return Expr("gt", (self, lift(other)))
    def __ge__(self, other): return Expr("ge", (self, lift(other)))

    def __repr__(self) -> str:
        """The tree as text; a subtree used more than once is written once, as `#k=...`, then `#k` (codegen
        hashes this text, and writing shared subtrees out in full grows exponentially with the sharing)."""
        uses: dict[int, int] = {}
        for node in walk(self):
            for child in node.args:
                uses[id(child)] = uses.get(id(child), 0) + 1
        labels: dict[int, str] = {}

        def text(node: "Expr") -> str:
            if node.op == "var":
                return f"${node.value}"
            if node.op == "const":
                return repr(node.value)
            if id(node) in labels:
                return labels[id(node)]
            if node.op == "cast":  # (its argument written once: twice per level doubled the work at each cast)
                body = f"cast({text(node.args[0])}, {node.value!r})"
            else:
                body = f"{node.op}({', '.join(text(a) for a in node.args)})"
            if uses.get(id(node), 0) > 1:
                labels[id(node)] = f"#{len(labels)}"
                return f"{labels[id(node)]}={body}"
            return body

        return text(self)


def lift(value) -> Expr:
    return value if isinstance(value, Expr) else Expr("const", (), value)


def var(index: int) -> Expr:
    """The `index`-th input of the op."""
    return Expr("var", (), index)


def _unary(name):
    def build(x):
        return Expr(name, (lift(x),))
    build.__name__ = name
    return build


def _binary(name):
    def build(a, b):
        return Expr(name, (lift(a), lift(b)))
    build.__name__ = name
    return build


exp, log, sqrt, tanh, erf, abs_, floor, ceil, sin, cos, not_ = (
    _unary(n) for n in ("exp", "log", "sqrt", "tanh", "erf", "abs", "floor", "ceil", "sin", "cos", "not"))
maximum, minimum, eq, ne, and_, or_ = (_binary(n) for n in ("max", "min", "eq", "ne", "and", "or"))
tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log1p, expm1, trunc, rint = (
    _unary(n) for n in LIBM_UNARY)
atan2, fmod, hypot, copysign, nextafter = (_binary(n) for n in LIBM_BINARY)


def select(cond, if_true, if_false) -> Expr:
    return Expr("select", (lift(cond), lift(if_true), lift(if_false)))


def cast(x, dtype_name: str) -> Expr:
    return Expr("cast", (lift(x),), dtype_name)


def walk(*exprs: Expr):
    """Every node of the trees, children before parents (each shared node once)."""
    seen, order, stack = set(), [], [(e, False) for e in reversed(exprs)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in seen:
            continue
        if expanded:
            seen.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in reversed(node.args))
    return order


def evaluate(expr: Expr, xp, inputs: list, dtype) -> Any:
    """Run the tree on arrays of `xp`, computing in numpy dtype `dtype` (for testing)."""
    import math

    values: dict[int, Any] = {}
    for node in walk(expr):
        a = [values[id(x)] for x in node.args]
        op = node.op
        if op == "var":
            v = xp.asarray(inputs[node.value])
            v = v if v.dtype == bool else v.astype(dtype)
        elif op == "const":
            v = xp.asarray(node.value, dtype=dtype)
        elif op == "cast":
            v = a[0].astype(node.value)
        elif op == "select":
            v = xp.where(a[0], a[1], a[2])
        elif op == "erf":
            v = xp.vectorize(math.erf, otypes=[dtype])(a[0])
        elif op in LIBM:
            v = getattr(xp, LIBM[op])(*a)
        else:
            fn = {"neg": xp.negative, "abs": xp.abs, "not": xp.logical_not, "max": xp.maximum,
                  "min": xp.minimum, "pow": xp.power, "add": xp.add, "sub": xp.subtract,
                  "mul": xp.multiply, "div": xp.divide, "lt": xp.less, "le": xp.less_equal,
                  "gt": xp.greater, "ge": xp.greater_equal, "eq": xp.equal, "ne": xp.not_equal,
                  "and": xp.logical_and, "or": xp.logical_or}.get(op) or getattr(xp, op)
            v = fn(*a)
        values[id(node)] = v
    return values[id(expr)]
