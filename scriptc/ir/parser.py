"""Reads the IR's text form back into a Graph (lark LALR); print -> parse -> print is the identity."""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from scriptc.config import parser_cache
from scriptc.types import (
    SCALAR_TYPES,
    DTYPES_BY_NAME,
    DictType,
    ListType,
    ModuleType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    device,
)

from .graph import Block, Graph, Node, SourceLocation, Value


class ParseError(ValueError):
    """IR text that does not parse: says line:col and the offending token."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        self.line, self.col = line, col
        super().__init__(f"{line}:{col}: {message}" if line is not None else message)


@lru_cache(maxsize=1)
def _parser():
    from lark import Lark
    grammar = (Path(__file__).with_name("ir.lark")).read_text()
    return Lark(grammar, parser="lalr", propagate_positions=False, maybe_placeholders=True,
                cache=parser_cache("ir-grammar"))


def parse(text: str) -> Graph:
    """Parse IR text into a Graph; ParseError with line:col on malformed text or undefined values."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        tree = _parser().parse(text)
    except UnexpectedToken as exc:
        raise ParseError(f"unexpected token {str(exc.token)!r}", exc.line, exc.column) from None
    except UnexpectedCharacters as exc:
        char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        raise ParseError(f"unexpected character {char!r}", exc.line, exc.column) from None
    except UnexpectedEOF:
        lines = text.splitlines() or [""]
        raise ParseError("unexpected end of input", len(lines), len(lines[-1]) + 1) from None
    except UnexpectedInput as exc:
        raise ParseError(str(exc), getattr(exc, "line", None), getattr(exc, "column", None)) from None
    return _Builder().graph(tree.children[0])


class _Builder:
    """Walks the lark tree and builds Values and Nodes, resolving names in scope."""

    def __init__(self):
        self.scope: dict[str, Value] = {}

    def _define(self, token, value: Value) -> None:
        name = str(token)[1:]
        if name in self.scope:
            raise ParseError(f"value %{name} is defined twice", token.line, token.column)
        # The printer writes hints as name, name.1, name.2, ...: keep the hint, drop the suffix.
        value.name = None if name.isdigit() else re.sub(r"\.\d+$", "", name)
        self.scope[name] = value

    def _use(self, token) -> Value:
        name = str(token)[1:]
        try:
            return self.scope[name]
        except KeyError:
            raise ParseError(f"undefined value %{name}", token.line, token.column) from None

    def graph(self, tree) -> Graph:
        g = Graph()
        items = [c for c in tree.children]
        params, rest = _split_params(items)
        for p in params:
            self._define(p.children[0], g.add_input(_type(p.children[1])))
        nodes = [c for c in rest if getattr(c, "data", None) == "node"]
        returns = [c for c in rest if c is not None and getattr(c, "data", None) is None]
        for n in nodes:
            self.node(n, g.block)
        for r in returns:
            g.add_output(self._use(r))
        return g

    def node(self, tree, block: Block) -> None:
        children = list(tree.children)
        outdecls = []
        while children and (children[0] is None or getattr(children[0], "data", None) == "outdecl"):
            item = children.pop(0)
            if item is not None:
                outdecls.append(item)
        op = str(children.pop(0))
        attrs = {}
        if children and getattr(children[0], "data", None) == "attrs":
            attrs = {str(a.children[0]): _literal(a.children[1]) for a in children.pop(0).children if a is not None}
        elif children and children[0] is None:
            children.pop(0)
        inputs, loc, blocks = [], None, []
        for c in children:
            if c is None:
                continue
            data = getattr(c, "data", None)
            if data == "block":
                blocks.append(c)
            elif c.type == "VALUE":
                inputs.append(self._use(c))
            elif c.type == "LOC":
                loc = _location(str(c))
        node = Node(op, inputs, [_type(d.children[1]) for d in outdecls], attrs, loc)
        block.append(node)
        for b in blocks:
            self.block(b, node.add_block())
        for d, out in zip(outdecls, node.outputs):
            self._define(d.children[0], out)

    def block(self, tree, block: Block) -> None:
        children = list(tree.children)[1:]
        params, rest = _split_params(children)
        for p in params:
            self._define(p.children[0], block.add_param(_type(p.children[1])))
        for c in rest:
            if c is None:
                continue
            if getattr(c, "data", None) == "node":
                self.node(c, block)
            else:
                block.add_return(self._use(c))


def _split_params(items):
    params = [c for c in items if getattr(c, "data", None) == "param"]
    rest = [c for c in items if getattr(c, "data", None) != "param"]
    return params, rest


def _location(comment: str) -> SourceLocation | None:
    text = comment[1:].strip()
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return SourceLocation(parts[0], int(parts[1]), int(parts[2]))
    return None


def _type(tree) -> Type:
    kind = tree.data
    name = str(tree.children[0])
    if kind == "simple_type":
        if name == "Tensor":
            return TensorType()
        if name == "Module":
            return ModuleType()
        if name in SCALAR_TYPES:
            return SCALAR_TYPES[name]
        raise ParseError(f"unknown type {name!r}", tree.children[0].line, tree.children[0].column)
    if kind == "generic_type":
        args = [_type(c) for c in tree.children[1:]]
        builders = {"List": lambda: ListType(args[0]), "Optional": lambda: OptionalType(args[0]),
                    "Tuple": lambda: TupleType(tuple(args)), "Dict": lambda: DictType(args[0], args[1])}
        if name not in builders:
            raise ParseError(f"unknown type {name!r}", tree.children[0].line, tree.children[0].column)
        return builders[name]()
    args = [c for c in tree.children[1:] if c is not None]
    if name == "Module":
        return ModuleType(str(args[0].children[0]) if args else "")
    if name != "Tensor":
        raise ParseError(f"unknown type {name!r}", tree.children[0].line, tree.children[0].column)
    dtype = None
    shape = None
    dev = "cpu"
    for i, a in enumerate(args):
        if a.data == "shape":
            shape = tuple(_dim(d) for d in a.children if d is not None)
        elif a.data == "targ_name":
            text = str(a.children[0])
            if i == 0:
                if text not in DTYPES_BY_NAME:
                    raise ParseError(f"unknown dtype {text!r}", a.children[0].line, a.children[0].column)
                dtype = DTYPES_BY_NAME[text]
            else:
                dev = text
    return TensorType(dtype, shape, dev)


def _dim(tree):
    if tree.data == "dim_int":
        return int(tree.children[0])
    if tree.data == "dim_sym":
        return str(tree.children[0])
    return None


_IDENTS = {"True": True, "False": False, "None": None, "inf": math.inf, "nan": math.nan}


def _literal(tree):
    kind = tree.data
    c = tree.children
    if kind == "number":
        text = str(c[0])
        return float(text) if any(ch in text for ch in ".eE") else int(text)
    if kind == "string":
        return json.loads(str(c[0]))
    if kind == "ident":
        text = str(c[0])
        if text in _IDENTS:
            return _IDENTS[text]
        if text in DTYPES_BY_NAME:
            return DTYPES_BY_NAME[text]
        raise ParseError(f"unknown attribute value {text!r}", c[0].line, c[0].column)
    if kind == "neg_ident":
        if str(c[0]) != "inf":
            raise ParseError(f"unknown attribute value -{c[0]}", c[0].line, c[0].column)
        return -math.inf
    if kind == "list":
        return [_literal(x) for x in c if x is not None]
    if kind == "tuple":
        return tuple(_literal(x) for x in c if x is not None)
    if kind == "dict":
        return {json.loads(str(p.children[0])): _literal(p.children[1]) for p in c if p is not None}
    if kind == "device":
        return device(json.loads(str(c[0])))
    if kind == "complex_number":
        return complex(_literal(c[0]), _literal(c[1]))
    if kind == "elided_array":
        if str(c[3]) != "values":
            raise ParseError(f"unexpected {str(c[3])!r} in an array literal", c[3].line, c[3].column)
        raise ParseError(f"the values of this {c[2]}-value array were left out when the graph was printed "
                         f"(str(graph) shortens large constants); scriptc.ir.print_graph(graph) writes text "
                         f"that parses back", c[0].line, c[0].column)
    if kind == "array":
        name = str(c[0])
        if name not in DTYPES_BY_NAME:
            raise ParseError(f"unknown dtype {name!r}", c[0].line, c[0].column)
        shape = tuple(_dim(d) for d in c[1].children if d is not None)
        values = [_literal(x) for x in c[2:] if x is not None]
        array = np.array(values, dtype=DTYPES_BY_NAME[name].np)
        if array.size != int(np.prod(shape)) or any(not isinstance(d, int) for d in shape):
            raise ParseError(f"array literal has {array.size} values for shape {list(shape)}", c[0].line, c[0].column)
        return array.reshape(shape)
    raise ParseError(f"unknown literal {kind}")
