"""Reads the IR's text form back into a Graph; print -> parse -> print is the identity.

The grammar is ir.lark's (the readable spec of the text form). The parser is written by hand over
it, one method per rule, each matching its tokens with a regex at the cursor: archives are read by
the deployment runtime, and a generated LALR parser took over a minute on a 100,000-node graph
(this one: about a second). Nesting (blocks in nodes, lists in literals, types in types) is bounded
by MAX_NESTING, and parsing runs with room for that many levels, so it never runs into Python's
recursion limit.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from scriptc.types import (
    SCALAR_TYPES,
    DTYPES_BY_NAME,
    DictType,
    EnumType,
    EnumValue,
    FutureType,
    ListType,
    ModuleType,
    NamedTupleType,
    InterfaceType,
    ObjectType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    UnionType,
    device,
)

from .graph import Block, Graph, Node, SourceLocation, Value
from .nesting import deep_recursion

# The deepest nesting of blocks, literals or types the text may have: a chain of 500 conditional
# expressions in a script is 500 nested prim::If blocks.
MAX_NESTING = 1000
# Types nest far less (what walks a type - str(), verify's fits, an archive's checks - recurses once a
# level, outside the parser's room): past this, a ParseError.
MAX_TYPE_NESTING = 64


class ParseError(ValueError):
    """IR text that does not parse: says line:col and the offending token."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        self.line, self.col = line, col
        super().__init__(f"{line}:{col}: {message}" if line is not None else message)


# The terminals of ir.lark (lark's common.* definitions for NAME, INT, SIGNED_NUMBER, ESCAPED_STRING).
_SPACE = re.compile(r"[ \t\f\r\n]*")
_VALUE = re.compile(r"%[A-Za-z0-9_.]+")
_BLOCKNAME = re.compile(r"block[0-9]+(?![A-Za-z0-9_])")
_OPNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"[0-9]+")
_DOTTED = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LOC = re.compile(r"#[^\n]*")
# The text of a type without nested generics (`int`, `Tensor(float32, [B, 4])`, `Module(fc1)`): each
# is parsed once per graph, then looked up.
_PLAIN_TYPE = re.compile(r"[A-Za-z_]+(?:\([^()\[\]]*(?:\[[^\[\]]*\][^()\[\]]*)?\))?(?![\[(A-Za-z0-9_])")
_TOKEN = re.compile(r"[A-Za-z0-9_%.]+|.", re.DOTALL)  # what an error names as the offending token
_IDENTS = {"True": True, "False": False, "None": None, "inf": math.inf, "nan": math.nan}


def parse(text: str) -> Graph:
    """Parse IR text into a Graph; ParseError with line:col on malformed text or undefined values."""
    with deep_recursion():
        return _Parser(text).graph()


def parse_type(text: str) -> Type:
    """One type in its IR text form (what str(t) writes: `Dict[str, List[Tensor]]`, `int|float`,
    `Object(Point)`), parsed in time linear in the text; ParseError otherwise."""
    with deep_recursion():
        parser = _Parser(text)
        parsed = parser.type()
        parser.skip()
        if parser.pos != len(text):
            raise parser.unexpected()
        return parsed


class _Parser:
    """A cursor over the text, and the values defined so far by name."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.scope: dict[str, Value] = {}
        self.types: dict[str, Type] = {}
        self._nesting = _Nesting(self)
        self.type_depth = 0

    # --- the cursor ------------------------------------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> ParseError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        return ParseError(message, line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1)

    def unexpected(self) -> ParseError:
        self.skip()
        if self.pos >= len(self.text):
            return self.error("unexpected end of input")
        token = _TOKEN.match(self.text, self.pos).group()
        return self.error(f"unexpected token {token!r}")

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self, literal: str) -> bool:
        self.skip()
        return self.text.startswith(literal, self.pos)

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str) -> None:
        if not self.accept(literal):
            raise self.unexpected()

    def token(self, pattern: re.Pattern) -> str | None:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def need(self, pattern: re.Pattern) -> str:
        found = self.token(pattern)
        if found is None:
            raise self.unexpected()
        return found

    def nested(self) -> "_Nesting":
        """One level deeper for a `with` block; past MAX_NESTING levels, a ParseError."""
        return self._nesting

    def separated(self, item, close: str, trailing_comma: bool = False) -> list:
        """item() repeated, separated by commas, up to `close` (consumed)."""
        items = []
        if self.accept(close):
            return items
        while True:
            items.append(item())
            if self.accept(close):
                return items
            self.expect(",")
            if trailing_comma and self.accept(close):
                return items

    # --- values ----------------------------------------------------------------------------------
    def define(self, value: Value, at: int, name: str) -> None:
        name = name[1:]
        if name in self.scope:
            raise self.error(f"value %{name} is defined twice", at)
        # The printer writes hints as name, name.1, name.2, ...: keep the hint, drop the suffix.
        value.name = None if name.isdigit() else re.sub(r"\.\d+$", "", name)
        self.scope[name] = value

    def use(self) -> Value:
        self.skip()
        at = self.pos
        name = self.need(_VALUE)[1:]
        try:
            return self.scope[name]
        except KeyError:
            raise self.error(f"undefined value %{name}", at) from None

    def params(self) -> list[tuple[int, str, Type]]:
        """`(%a : T, ...)` after the opening parenthesis: (position, name, type) each."""
        return self.separated(self.declaration, ")")

    def declaration(self) -> tuple[int, str, Type]:
        """`%a : T`, a parameter or a node's output: (position, name, type)."""
        self.skip()
        at = self.pos
        name = self.need(_VALUE)
        self.expect(":")
        return at, name, self.type()

    # --- structure -------------------------------------------------------------------------------
    def graph(self) -> Graph:
        if self.token(_NAME) != "graph":
            self.pos = 0
            raise self.unexpected()
        self.expect("(")
        g = Graph()
        for at, name, t in self.params():
            self.define(g.add_input(t), at, name)
        self.expect(":")
        while not self.peek("return"):
            self.node(g.block)
        self.expect("return")
        self.expect("(")
        for value in self.separated(self.use, ")"):
            g.add_output(value)
        self.skip()
        if self.pos != len(self.text):
            raise self.unexpected()
        return g

    def node(self, block: Block) -> None:
        outputs = []
        if not self.peek("="):
            outputs.append(self.declaration())
            while self.accept(","):
                outputs.append(self.declaration())
        self.expect("=")
        op = self.need(_OPNAME)
        attrs = {}
        if self.accept("["):
            def attr():
                key = self.need(_NAME)
                self.expect("=")
                return key, self.literal()
            attrs = dict(self.separated(attr, "]"))
        self.expect("(")
        inputs = self.separated(self.use, ")")
        loc = None
        location = self.token(_LOC)
        if location is not None:
            loc = _location(location)
        node = Node(op, inputs, [t for _, _, t in outputs], attrs, loc)
        block.append(node)
        while self.token(_BLOCKNAME) is not None:
            with self.nested():
                self.block(node.add_block())
        for (at, name, _), out in zip(outputs, node.outputs):
            self.define(out, at, name)

    def block(self, block: Block) -> None:
        self.expect("(")
        for at, name, t in self.params():
            self.define(block.add_param(t), at, name)
        self.expect(":")
        while not self.peek("->"):
            self.node(block)
        self.expect("->")
        self.expect("(")
        for value in self.separated(self.use, ")"):
            block.add_return(value)

    # --- types -----------------------------------------------------------------------------------
    def type(self) -> Type:
        """One type, or several joined by `|` (a Union)."""
        if self.type_depth >= MAX_TYPE_NESTING:
            raise self.error(f"a type nested more than {MAX_TYPE_NESTING} levels deep")
        self.type_depth += 1
        try:
            first = self.one_type()
            if not self.peek("|"):
                return first
            options = [first]
            while self.accept("|"):
                options.append(self.one_type())
            return UnionType(tuple(options))
        finally:
            self.type_depth -= 1

    def one_type(self) -> Type:
        self.skip()
        plain = _PLAIN_TYPE.match(self.text, self.pos)
        if plain is None:
            return self.parse_type()
        known = self.types.get(plain.group())
        if known is not None:
            self.pos = plain.end()
            return known
        start = self.pos
        parsed = self.parse_type()
        if self.text[start:self.pos].rstrip() == plain.group():
            self.types[plain.group()] = parsed
        return parsed

    def parse_type(self) -> Type:
        at = self.pos
        name = self.need(_NAME)
        if self.accept("["):
            with self.nested():
                args = self.separated(self.type, "]")
            builders = {"List": (1, lambda: ListType(args[0])), "Optional": (1, lambda: OptionalType(args[0])),
                        "Tuple": (None, lambda: TupleType(tuple(args))),
                        "Dict": (2, lambda: DictType(args[0], args[1])),
                        "Future": (1, lambda: FutureType(args[0]))}
            if name not in builders:
                raise self.error(f"unknown type {name!r}", at)
            arity, build = builders[name]
            if (not args and name != "Tuple") or (arity is not None and len(args) != arity):
                raise self.error(f"{name} takes {arity or 'at least one'} type argument(s), got {len(args)}", at)
            return build()
        if self.accept("("):
            return self.call_type(name, at)
        if name == "Tensor":
            return TensorType()
        if name == "Module":
            return ModuleType()
        if name in SCALAR_TYPES:
            return SCALAR_TYPES[name]
        raise self.error(f"unknown type {name!r}", at)

    def call_type(self, name: str, at: int) -> Type:
        """Module(path), Tensor(dtype, [dims], device), Object(name), Enum(name, value type) or
        NamedTuple(name, field: type, ...), after the opening parenthesis."""
        def targ():
            self.skip()
            start = self.pos
            if self.accept("?"):
                return start, None
            if self.accept("["):
                return start, tuple(self.separated(self.dim, "]"))
            if self.text.startswith('"', self.pos):
                return start, self.string()
            for pattern in (_DOTTED, _NAME, _INT):
                found = self.token(pattern)
                if found is not None:
                    if pattern is _NAME and self.accept(":"):
                        with self.nested():
                            return start, _Field(found, self.type())
                    return start, found
            raise self.unexpected()
        args = self.separated(targ, ")")
        if name == "Module":
            return ModuleType(str(args[0][1]) if args and isinstance(args[0][1], str) else "")
        if name in ("Object", "Interface", "Enum", "NamedTuple"):
            return self.named_type(name, [arg for _, arg in args], at)
        if name != "Tensor":
            raise self.error(f"unknown type {name!r}", at)
        dtype, shape, dev = None, None, "cpu"
        for i, (start, arg) in enumerate(args):
            if isinstance(arg, tuple):
                shape = arg
            elif isinstance(arg, str):
                if i == 0:
                    if arg not in DTYPES_BY_NAME:
                        raise self.error(f"unknown dtype {arg!r}", start)
                    dtype = DTYPES_BY_NAME[arg]
                else:
                    dev = arg
        return TensorType(dtype, shape, dev)

    def named_type(self, kind: str, args: list, at: int) -> Type:
        if not args or not isinstance(args[0], str) or isinstance(args[0], _Field):
            raise self.error(f"{kind}(...) needs a name", at)
        name = args[0]
        if kind == "Object":
            return ObjectType(name)
        if kind == "Interface":
            return InterfaceType(name)
        if kind == "Enum":
            if len(args) != 2 or not isinstance(args[1], str) or args[1] not in SCALAR_TYPES:
                raise self.error("Enum(name, value type) needs the type of its values", at)
            return EnumType(name, SCALAR_TYPES[args[1]])
        fields = args[1:]
        if not all(isinstance(f, _Field) for f in fields):
            raise self.error("NamedTuple(name, field: type, ...) fields need types", at)
        return NamedTupleType(tuple(f.type for f in fields), name, tuple(f.name for f in fields))

    def dim(self):
        if self.accept("?"):
            return None
        found = self.token(_INT)
        if found is not None:
            return int(found)
        return self.need(_NAME)

    # --- literals --------------------------------------------------------------------------------
    def literal(self):
        self.skip()
        at = self.pos
        for opening, closing, build in (("[", "]", list), ("(", ")", tuple), ("{", "}", dict)):
            if self.accept(opening):
                item = self.pair if opening == "{" else self.literal
                with self.nested():
                    return build(self.separated(item, closing, trailing_comma=opening == "("))
        if self.peek('"'):
            return self.string()
        number = self.token(_NUMBER)
        if number is not None:
            return float(number) if any(ch in number for ch in ".eE") else int(number)
        if self.accept("-"):
            if self.need(_NAME) != "inf":
                raise self.error(f"unknown attribute value -{self.text[at + 1:self.pos].strip()}", at)
            return -math.inf
        name = self.need(_NAME)
        if name == "array" and self.accept("("):
            return self.array(at)
        if name == "Device" and self.accept("("):
            text = self.string()
            self.expect(")")
            try:
                return device(text)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise self.error(f"invalid device {text!r} ({exc})", at) from None
        if name == "complex" and self.accept("("):
            with self.nested():
                real = self.literal()
                self.expect(",")
                parts = [real, self.literal()]
            self.expect(")")
            if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts):
                raise self.error(f"complex() takes two numbers, got {parts}", at)
            return complex(*parts)
        if name == "Enum" and self.accept("("):
            enum = self.string()
            self.expect(",")
            member = self.string()
            self.expect(",")
            with self.nested():
                value = self.literal()
            self.expect(")")
            return EnumValue(enum, member, value)
        if name in _IDENTS:
            return _IDENTS[name]
        if name in DTYPES_BY_NAME:
            return DTYPES_BY_NAME[name]
        raise self.error(f"unknown attribute value {name!r}", at)

    def pair(self) -> tuple:
        key = self.string()
        self.expect(":")
        return key, self.literal()

    def string(self) -> str:
        self.skip()
        at = self.pos
        text = self.need(_STRING)
        try:
            return json.loads(text)
        except ValueError as exc:  # a control character or a bad escape inside the quotes
            raise self.error(f"invalid string literal ({exc.args[0]})", at) from None

    def array(self, at: int) -> np.ndarray:
        """array(dtype, [shape], [values]) after `array(`; the elided form str(graph) prints is refused."""
        name = self.need(_NAME)
        if name not in DTYPES_BY_NAME:
            raise self.error(f"unknown dtype {name!r}", at)
        self.expect(",")
        self.expect("[")
        shape = tuple(self.separated(self.dim, "]"))
        self.expect(",")
        if self.accept("<"):
            count = self.need(_INT)
            if self.need(_NAME) != "values":
                raise self.unexpected()
            raise self.error(f"the values of this {count}-value array were left out when the graph was printed "
                             f"(str(graph) shortens large constants); scriptc.ir.print_graph(graph) writes text "
                             f"that parses back", at)
        self.expect("[")
        values = self.separated(self.literal, "]")
        self.expect(")")
        if any(not isinstance(d, int) for d in shape):
            raise self.error(f"array literal has a shape of symbols {list(shape)}", at)
        try:
            array = np.array(values, dtype=DTYPES_BY_NAME[name].np)
        except (TypeError, ValueError, OverflowError) as exc:
            raise self.error(f"array literal values do not fit {name}: {exc}", at) from None
        if array.ndim != 1 or array.size != math.prod(shape):
            raise self.error(f"array literal has {array.size} values for shape {list(shape)}", at)
        return array.reshape(shape)


class _Field(str):
    """A NamedTuple field in a type's arguments: its name (the str) and its type."""

    def __new__(cls, name: str, type_: Type):
        field = super().__new__(cls, name)
        field.name, field.type = name, type_
        return field


class _Nesting:
    """The parser's nesting depth, entered with `with` around each nested rule."""

    def __init__(self, parser: _Parser):
        self.parser, self.depth = parser, 0

    def __enter__(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.parser.error(f"nested more than {MAX_NESTING} levels deep")

    def __exit__(self, *exc) -> None:
        self.depth -= 1


def _location(comment: str) -> SourceLocation | None:
    text = comment[1:].strip()
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return SourceLocation(parts[0], int(parts[1]), int(parts[2]))
    return None
