"""The typed AST jit.script compiles: one dataclass per construct, each with its 1-based line and column.

parser.py builds these from grammar.lark while lark parses (no parse tree in between). Names follow
Python's own `ast` module where a construct exists there. Constructs the grammar parses but
TorchScript refuses become `Unsupported` nodes carrying the refusal, so the compiler reports them
with their place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(eq=False, slots=True)
class Node:
    line: int
    col: int


# --- expressions ------------------------------------------------------------------------------

@dataclass(eq=False, slots=True)
class Name(Node):
    id: str


@dataclass(eq=False, slots=True)
class Constant(Node):
    """A literal: int, float, complex, str, bool, None or Ellipsis (`...`)."""

    value: Any


@dataclass(eq=False, slots=True)
class FormattedValue(Node):
    """One `{value!conversion:spec}` field of an f-string."""

    value: Node
    conversion: Optional[str]
    format_spec: str


@dataclass(eq=False, slots=True)
class JoinedStr(Node):
    """An f-string: literal text (str) and FormattedValue parts in order."""

    parts: list


@dataclass(eq=False, slots=True)
class Attribute(Node):
    value: Node
    attr: str


@dataclass(eq=False, slots=True)
class Slice(Node):
    lower: Optional[Node]
    upper: Optional[Node]
    step: Optional[Node]


@dataclass(eq=False, slots=True)
class Subscript(Node):
    """value[index]; index is an expression, a Slice, or a Tuple of them (`x[1:, None, ...]`)."""

    value: Node
    index: Node


@dataclass(eq=False, slots=True)
class Keyword(Node):
    name: str
    value: Node


@dataclass(eq=False, slots=True)
class Call(Node):
    func: Node
    args: list
    keywords: list


@dataclass(eq=False, slots=True)
class BinOp(Node):
    """left op right, op being Python's spelling: '+', '//', '@', '<<', '&', '**', ..."""

    op: str
    left: Node
    right: Node


@dataclass(eq=False, slots=True)
class UnaryOp(Node):
    """op operand, op one of '-', '+', '~', 'not'."""

    op: str
    operand: Node


@dataclass(eq=False, slots=True)
class BoolOp(Node):
    """values joined by one of 'and' / 'or' (short-circuiting, left to right)."""

    op: str
    values: list


@dataclass(eq=False, slots=True)
class Compare(Node):
    """A comparison chain: left ops[0] comparators[0] ops[1] comparators[1] ...; an op is one of
    '<', '<=', '>', '>=', '==', '!=', 'in', 'not in', 'is', 'is not'."""

    left: Node
    ops: list
    comparators: list


@dataclass(eq=False, slots=True)
class IfExp(Node):
    test: Node
    body: Node
    orelse: Node


@dataclass(eq=False, slots=True)
class Tuple(Node):
    elts: list


@dataclass(eq=False, slots=True)
class List(Node):
    elts: list


@dataclass(eq=False, slots=True)
class Dict(Node):
    keys: list
    values: list


@dataclass(eq=False, slots=True)
class Comprehension(Node):
    """`for target in iter if ifs...` of a comprehension."""

    target: Node
    iter: Node
    ifs: list


@dataclass(eq=False, slots=True)
class ListComp(Node):
    elt: Node
    generators: list


@dataclass(eq=False, slots=True)
class DictComp(Node):
    key: Node
    value: Node
    generators: list


@dataclass(eq=False, slots=True)
class Starred(Node):
    """`*value`, as an assignment target (`a, *rest = ...`)."""

    value: Node


@dataclass(eq=False, slots=True)
class Unsupported(Node):
    """A construct Python has and TorchScript refuses (lambda, yield, try, ...): compiling it is a
    ScriptError with this message, at this place."""

    message: str


# --- statements -------------------------------------------------------------------------------

@dataclass(eq=False, slots=True)
class Param(Node):
    """A parameter; kind is 'positional', 'keyword_only', 'positional_only', 'varargs' (*args) or
    'varkw' (**kwargs)."""

    name: str
    annotation: Optional[Node]
    default: Optional[Node]
    kind: str = "positional"
    type_comment: Optional[str] = None  # `x,  # type: List[int]` on its line (a `# type: (...) -> R` def)


@dataclass(eq=False, slots=True)
class FunctionDef(Node):
    name: str
    params: list
    returns: Optional[Node]
    body: list
    decorators: list = field(default_factory=list)
    type_comment: Optional[str] = None  # `# type: (int, str) -> bool` under the def line


@dataclass(eq=False, slots=True)
class ClassDef(Node):
    name: str
    bases: list
    body: list
    decorators: list = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Return(Node):
    value: Optional[Node]


@dataclass(eq=False, slots=True)
class Assign(Node):
    """targets[0] = targets[1] = ... = value."""

    targets: list
    value: Node
    type_comment: Optional[str] = None  # `x = []  # type: List[int]`


@dataclass(eq=False, slots=True)
class AnnAssign(Node):
    target: Node
    annotation: Node
    value: Optional[Node]


@dataclass(eq=False, slots=True)
class AugAssign(Node):
    """target op= value; op without the '=' ('+', '<<', ...)."""

    target: Node
    op: str
    value: Node


@dataclass(eq=False, slots=True)
class Expr(Node):
    value: Node


@dataclass(eq=False, slots=True)
class Pass(Node):
    pass


@dataclass(eq=False, slots=True)
class Break(Node):
    pass


@dataclass(eq=False, slots=True)
class Continue(Node):
    pass


@dataclass(eq=False, slots=True)
class If(Node):
    test: Node
    body: list
    orelse: list


@dataclass(eq=False, slots=True)
class While(Node):
    test: Node
    body: list
    orelse: list


@dataclass(eq=False, slots=True)
class For(Node):
    target: Node
    iter: Node
    body: list
    orelse: list


@dataclass(eq=False, slots=True)
class Raise(Node):
    exc: Optional[Node]


@dataclass(eq=False, slots=True)
class Assert(Node):
    test: Node
    msg: Optional[Node]


@dataclass(eq=False, slots=True)
class Delete(Node):
    targets: list


@dataclass(eq=False, slots=True)
class With(Node):
    """`with item [as name], ...:` (TorchScript takes only no_grad-like context managers)."""

    items: list
    body: list


@dataclass(eq=False, slots=True)
class WithItem(Node):
    context: Node
    name: Optional[str]
