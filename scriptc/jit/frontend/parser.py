"""Parse Python source into the typed AST (ast.py): lark LALR over grammar.lark, building nodes as it parses.

`AstBuilder` has one method per grammar rule; lark calls it with the rule's children when it
reduces the rule, so no parse tree is built (a 50,000-line function parses in seconds). Positions
come from the first token of each construct (the keyword of a statement, the bracket of a
display). Binary operators arrive as a flat sequence and are ordered here by Python's precedence.
"""

from __future__ import annotations

import ast as python_ast
from functools import lru_cache
from pathlib import Path

from lark import Lark, Transformer

from scriptc.config import parser_cache
from scriptc.ir.nesting import deep_recursion

from . import ast
from .fstrings import split_fstring
from .lalr import Indenter, Lexer, SyntaxProblem, Table, Tok
from .precedence import Infix, Prefix, order, position
from .source import Source

class _Arguments:
    __slots__ = ("args", "keywords", "refusal")

    def __init__(self, args, keywords, refusal=None):
        self.args, self.keywords, self.refusal = args, keywords, refusal


class _StarArgs:
    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message


class _Comprehension:
    __slots__ = ("result", "generators")

    def __init__(self, result, generators):
        self.result, self.generators = result, generators


def _statements(items) -> list:
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend(item)
        elif item is not None and not isinstance(item, Tok):
            out.append(item)
    return out


class AstBuilder(Transformer):
    """Grammar rule -> AST node. Each method gets the rule's children as one list (placeholders for
    absent optional parts are None)."""

    def __init__(self):
        super().__init__()
        self.sources: list[Source] = []

    # --- module and definitions ---------------------------------------------------------------
    def file_input(self, children):
        return _statements(children)

    def eval_input(self, children):
        return children[0]

    def decorator(self, children):
        at, target, arguments = children
        if arguments is None:
            return target
        return ast.Call(at.line, at.column + 1, target, arguments.args, arguments.keywords)

    def decorators(self, children):
        return list(children)

    def decorated(self, children):
        decorators, definition = children
        if isinstance(definition, (ast.FunctionDef, ast.ClassDef)):
            definition.decorators = decorators
        return definition

    def async_funcdef(self, children):
        keyword = children[0]
        return ast.Unsupported(keyword.line, keyword.column, "async functions are not supported")

    def funcdef(self, children):
        keyword, name, params, returns, body = children
        node = ast.FunctionDef(keyword.line, keyword.column, str(name), params or [], returns, body)
        if self.sources and body:
            comments = self.sources[-1].type_comments(keyword.line, body[0].line - 1)
            # `# type: (A, B) -> R` under the def line, or (`# type: (...) -> R`) one comment per parameter line
            signature = [text for _, text in comments if text.startswith("(")]
            node.type_comment = signature[0] if signature else (comments[0][1] if comments else None)
            by_line = {line: text for line, text in comments if not text.startswith("(")}
            for param in node.params:
                param.type_comment = by_line.get(param.line)
        return node

    def parameters(self, children):
        params = []
        for item in children:
            if item is None:
                continue
            if isinstance(item, Tok):  # the `/` after positional-only parameters
                for p in params:
                    p.kind = "positional_only"
            elif isinstance(item, list):
                params.extend(item)
            else:
                params.append(item)
        return params

    def starparams(self, children):
        star, rest = children
        return ([star] if star is not None else []) + rest

    def starparam(self, children):
        star, param = children
        param.kind, param.line, param.col = "varargs", star.line, star.column
        return param

    def starguard(self, children):
        return None

    def poststarparams(self, children):
        out = []
        for p in children:
            if p is None:
                continue
            if p.kind == "positional":
                p.kind = "keyword_only"
            out.append(p)
        return out

    def kwparams(self, children):
        stars, param = children
        param.kind, param.line, param.col = "varkw", stars.line, stars.column
        return param

    def paramvalue(self, children):
        param, default = children
        param.default = default
        return param

    def typedparam(self, children):
        name, annotation = children
        return ast.Param(name.line, name.column, str(name), annotation, None)

    def _lambda(self, children):
        keyword = children[0]
        return ast.Unsupported(keyword.line, keyword.column, "Lambda aren't supported")

    lambdef = lambdef_nocond = _lambda

    def classdef(self, children):
        keyword, name, arguments, body = children
        bases = arguments.args if arguments is not None else []
        return ast.ClassDef(keyword.line, keyword.column, str(name), bases, body)

    def suite(self, children):
        return _statements(children)

    # --- simple statements ------------------------------------------------------------------------------
    def simple_stmt(self, children):
        return _statements(children)

    def expr_stmt(self, children):
        value = children[0]
        return ast.Expr(value.line, value.col, value)

    def annassign(self, children):
        target, annotation, value = children
        return ast.AnnAssign(target.line, target.col, target, annotation, value)

    def assign(self, children):
        *targets, value = children
        first = targets[0]
        node = ast.Assign(first.line, first.col, targets, value)
        if self.sources:
            node.type_comment = self.sources[-1].type_comment(first.line, first.line)
        return node

    def augassign(self, children):
        target, op, value = children
        return ast.AugAssign(target.line, target.col, target, op, value)

    def augassign_op(self, children):
        return str(children[0])[:-1]

    def del_stmt(self, children):
        keyword, targets = children
        items = targets.elts if isinstance(targets, ast.Tuple) else [targets]
        return ast.Delete(keyword.line, keyword.column, items)

    def pass_stmt(self, children):
        return ast.Pass(children[0].line, children[0].column)

    def break_stmt(self, children):
        return ast.Break(children[0].line, children[0].column)

    def continue_stmt(self, children):
        return ast.Continue(children[0].line, children[0].column)

    def return_stmt(self, children):
        keyword, value = children
        return ast.Return(keyword.line, keyword.column, value)

    def yield_stmt(self, children):
        return children[0]

    def raise_stmt(self, children):
        keyword, exc, _cause = children
        return ast.Raise(keyword.line, keyword.column, exc)

    def import_stmt(self, children):
        return children[0]

    def _import(self, children):
        keyword = children[0]
        return ast.Unsupported(keyword.line, keyword.column, "import statements are not supported")

    import_name = import_from = _import

    def dotted_name(self, children):
        first = children[0]
        node = ast.Name(first.line, first.column, str(first))
        for part in children[1:]:
            node = ast.Attribute(first.line, first.column, node, str(part))
        return node

    def global_stmt(self, children):
        return ast.Unsupported(children[0].line, children[0].column, "global variables aren't supported")

    def nonlocal_stmt(self, children):
        return ast.Unsupported(children[0].line, children[0].column, "nonlocal declarations are not supported")

    def assert_stmt(self, children):
        keyword, test, msg = children
        return ast.Assert(keyword.line, keyword.column, test, msg)

    # --- compound statements -------------------------------------------------------------------------
    def async_stmt(self, children):
        keyword, statement = children
        what = "functions" if isinstance(statement, ast.FunctionDef) else "statements"
        return ast.Unsupported(keyword.line, keyword.column, f"async {what} are not supported")

    def if_stmt(self, children):
        keyword, test, body, elifs, orelse = children
        orelse = orelse or []
        for elif_keyword, elif_test, elif_body in reversed(elifs):
            orelse = [ast.If(elif_keyword.line, elif_keyword.column, elif_test, elif_body, orelse)]
        return ast.If(keyword.line, keyword.column, test, body, orelse)

    def elifs(self, children):
        return list(children)

    def elif_(self, children):
        return tuple(children)

    def while_stmt(self, children):
        keyword, test, body, orelse = children
        return ast.While(keyword.line, keyword.column, test, body, orelse or [])

    def for_stmt(self, children):
        keyword, target, iterable, body, orelse = children
        return ast.For(keyword.line, keyword.column, target, iterable, body, orelse or [])

    def try_stmt(self, children):
        return ast.Unsupported(children[0].line, children[0].column, "try blocks aren't supported")

    def try_finally(self, children):
        return ast.Unsupported(children[0].line, children[0].column, "try/finally is not supported")

    def with_stmt(self, children):
        keyword, items, body = children
        return ast.With(keyword.line, keyword.column, items, body)

    def with_items(self, children):
        return list(children)

    def with_item(self, children):
        context, name = children
        return ast.WithItem(context.line, context.col, context, str(name) if name is not None else None)

    # --- expressions ----------------------------------------------------------------------------------
    def ternary(self, children):
        body, test, orelse = children
        return ast.IfExp(body.line, body.col, test, body, orelse)

    def assign_expr(self, children):
        name = children[0]
        return ast.Unsupported(name.line, name.column,
                               "assignment expressions (the walrus operator :=) are not supported")

    def or_test(self, children):
        return order(children)

    expr = or_test

    def unary_op(self, children):
        token = children[0]
        return Prefix(str(token), token.line, token.column)

    arith_unary_op = unary_op

    def binop(self, children):
        token = children[0]
        symbol = str(token) if len(children) == 1 else " ".join(str(t) for t in children)  # `not in`, `is not`
        return Infix(symbol, token.line, token.column)

    arith_binop = binop

    def star_expr(self, children):
        star, value = children
        return ast.Starred(star.line, star.column, value)

    def funccall(self, children):
        func, arguments = children
        if arguments is None:
            return ast.Call(func.line, func.col, func, [], [])
        if arguments.refusal is not None:
            return ast.Unsupported(func.line, func.col, arguments.refusal)
        return ast.Call(func.line, func.col, func, arguments.args, arguments.keywords)

    def getitem(self, children):
        value, index = children
        return ast.Subscript(value.line, value.col, value, index)

    def getattr(self, children):
        value, name = children
        return ast.Attribute(value.line, value.col, value, str(name))

    def arguments(self, children):
        args, keywords, refusal = [], [], None
        for item in children:
            if item is None:
                continue
            for part in item if isinstance(item, list) else [item]:  # (starargs gives a list)
                if part is None:
                    continue
                if isinstance(part, _StarArgs):
                    refusal = part.message
                elif isinstance(part, ast.Keyword):
                    keywords.append(part)
                else:
                    args.append(part)
        return _Arguments(args, keywords, refusal)

    def generator_argument(self, children):
        """`any(x > 0 for x in xs)`: a list comprehension, as TorchScript reads a generator expression."""
        comprehension = children[0]
        line, col = position(comprehension.result)
        return _Arguments([ast.ListComp(line, col, comprehension.result, comprehension.generators)], [])

    def starargs(self, children):
        """`f(*t, x)`: the starred tuples stay ast.Starred arguments (the compiler spreads them)."""
        return list(children)

    def kwargs(self, children):
        return _StarArgs("**kwargs in calls are not supported")

    def stararg(self, children):
        star, value = children
        return ast.Starred(star.line, star.column, value)

    def keyword_argument(self, children):
        name, value = children
        return ast.Keyword(name.line, name.column, str(name), value)

    def tuple(self, children):
        items = [c for c in children if c is not None]
        if items and isinstance(items[0], Tok):  # a parenthesized display: its position is the `(`
            line, col = items[0].line, items[0].column
            items = items[1:]
        else:
            line, col = position(items[0])
        return ast.Tuple(line, col, items)

    def list(self, children):
        bracket, *items = children
        return ast.List(bracket.line, bracket.column, [c for c in items if c is not None])

    def dict(self, children):
        brace, *items = children
        keys, values = [], []
        for item in items:
            if item is None:
                continue
            if isinstance(item, ast.Unsupported):
                return item
            keys.append(item[0])
            values.append(item[1])
        return ast.Dict(brace.line, brace.column, keys, values)

    def key_value(self, children):
        return tuple(children)

    def dict_unpack(self, children):
        star = children[0]
        return ast.Unsupported(star.line, star.column, "Dict expansion (e.g. `{**dict}`) is not supported")

    def _refused_display(message):
        def build(self, children):
            bracket = children[0]
            return ast.Unsupported(bracket.line, bracket.column, message)
        return build

    set = _refused_display("Set aren't supported")
    set_comprehension = _refused_display("set comprehensions are not supported")
    del _refused_display

    def tuple_comprehension(self, children):
        """`(x * 2 for x in xs)`: a list comprehension, as TorchScript reads a generator expression."""
        parenthesis, comprehension = children
        return ast.ListComp(parenthesis.line, parenthesis.column, comprehension.result, comprehension.generators)

    def list_comprehension(self, children):
        bracket, comprehension = children
        return ast.ListComp(bracket.line, bracket.column, comprehension.result, comprehension.generators)

    def dict_comprehension(self, children):
        brace, comprehension = children
        key, value = comprehension.result
        return ast.DictComp(brace.line, brace.column, key, value, comprehension.generators)

    def comprehension(self, children):
        result, generators, condition = children
        if condition is not None:
            generators[-1].ifs.append(condition)
        return _Comprehension(result, generators)

    def comp_fors(self, children):
        return list(children)

    def comp_for(self, children):
        is_async, keyword, target, iterable = children
        if is_async is not None:
            return ast.Comprehension(keyword.line, keyword.column, target,
                                     ast.Unsupported(is_async.line, is_async.column,
                                                     "async comprehensions are not supported"), [])
        return ast.Comprehension(keyword.line, keyword.column, target, iterable, [])

    def _yield(self, children):
        keyword = children[0]
        return ast.Unsupported(keyword.line, keyword.column, "Yield aren't supported (generators cannot be scripted)")

    yield_expr = yield_from = _yield

    def subscript_tuple(self, children):
        items = [c for c in children if c is not None]
        return ast.Tuple(items[0].line, items[0].col, items)

    def slice(self, children):
        lower, colon, upper, step = children
        line, col = position(lower) if lower is not None else (colon.line, colon.column)
        return ast.Slice(line, col, lower, upper, step)

    def sliceop(self, children):
        return children[0]

    def var(self, children):
        name = children[0]
        return ast.Name(name.line, name.column, str(name))

    def number(self, children):
        token = children[0]
        text = str(token).replace("_", "")
        kind = token.type
        if kind == "IMAG_NUMBER":
            value = complex(text)
        elif kind == "FLOAT_NUMBER":
            value = float(text)
        else:
            try:
                value = int(text, 0)
            except ValueError:
                raise SyntaxProblem(f"invalid number literal {text!r}", token.line, token.column) from None
        return ast.Constant(token.line, token.column, value)

    def string_concat(self, children):
        first = children[0]
        parts: list = []
        formatted = False
        for token in children:
            text = str(token)
            prefix = text[:len(text) - len(text.lstrip("rRbBuUfF"))].lower()
            if "b" in prefix:
                return ast.Unsupported(token.line, token.column, "bytes literals are not supported")
            if "f" in prefix:
                formatted = True
                parts.extend(split_fstring(text, prefix, token, self._fstring_field))
            else:
                parts.append(python_ast.literal_eval(text))
        if not formatted:
            return ast.Constant(first.line, first.column, "".join(parts))
        return ast.JoinedStr(first.line, first.column, _merge_text(parts))

    def _fstring_field(self, text: str, conversion, spec: str, token: Tok):
        value = parse_expression(text, token.line, token.column)
        return ast.FormattedValue(token.line, token.column, value, conversion, spec)

    def ellipsis(self, children):
        return ast.Constant(children[0].line, children[0].column, Ellipsis)

    def const_none(self, children):
        return ast.Constant(children[0].line, children[0].column, None)

    def const_true(self, children):
        return ast.Constant(children[0].line, children[0].column, True)

    def const_false(self, children):
        return ast.Constant(children[0].line, children[0].column, False)


def _merge_text(parts: list) -> list:
    out: list = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part != "":
            out.append(part)
    return out


_BUILDER = AstBuilder()


@lru_cache(maxsize=1)
def _parser() -> tuple[Lexer, Table, Table]:
    """The lexer and the tables for whole sources and for single expressions (built once a process;
    lark caches the table analysis on disk)."""
    grammar = Path(__file__).with_name("grammar.lark").read_text()
    tables = Lark(grammar, parser="lalr", lexer="basic", start=["file_input", "eval_input"],
                  transformer=_BUILDER, maybe_placeholders=True, cache=parser_cache("script-grammar"))
    return Lexer(tables), Table(tables, "file_input"), Table(tables, "eval_input")


def parse(source: Source) -> list:
    """The statements of `source` as AST nodes; a located ScriptError for text that is not Python."""
    lexer, statements, _ = _parser()
    text = source.text if source.text.endswith("\n") else source.text + "\n"
    _BUILDER.sources.append(source)
    try:
        with deep_recursion():
            return statements.run(Indenter(source.definition_indent).process(lexer.tokens(text)))
    except SyntaxProblem as exc:
        raise source.error(exc.message, exc.line, exc.col) from None
    finally:
        _BUILDER.sources.pop()


def parse_expression(text: str, line: int = 1, col: int = 1):
    """One expression (an f-string field, a string annotation), positioned at line:col of its source."""
    lexer, _, expressions = _parser()
    try:
        tree = expressions.run(Indenter().process(lexer.tokens(text.strip() + "\n")))
    except SyntaxProblem:
        raise SyntaxProblem(f"invalid expression {text!r}", line, col) from None
    return _relocate(tree, line, col)


def _relocate(node, line: int, col: int):
    """Give a sub-parse's nodes the place of the text they were cut from."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Node):
            item.line, item.col = line, col
            stack.extend(getattr(item, name) for name in item.__slots__)
        elif isinstance(item, list):
            stack.extend(item)
    return node
