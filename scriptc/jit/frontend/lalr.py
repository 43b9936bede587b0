"""Run lark's LALR tables fast: a one-regex lexer over the grammar's terminals, and the table loop.

lark builds (and caches) the LALR tables of grammar.lark; this module only runs them. lark's own
loop looks each action up through its Rule objects and makes its tokens through a general
constructor; here every table entry is resolved once (an int is a shift to that state, a tuple a
reduction), tokens are a slim str subclass, and one compiled alternation of all terminals lexes -
a 50,000-line function lexes and parses about twice as fast. The rule callbacks are the AST
builder's (parser.py), called exactly as lark calls them.
"""

from __future__ import annotations

import re
from functools import partial

from lark import Lark
from lark.lexer import PatternStr
from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders
from lark.parsers.lalr_analysis import Shift


class Tok(str):
    """A token: its text, terminal name (`type`) and 1-based position."""

    __slots__ = ("type", "line", "column", "end_line")

    @staticmethod
    def make(kind: str, text: str, line: int, column: int, end_line: int) -> "Tok":
        token = Tok(text)
        token.type, token.line, token.column, token.end_line = kind, line, column, end_line
        return token


class SyntaxProblem(Exception):
    """Text the lexer or the table rejects, at line:col."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


class Indenter:
    """Python's indentation as _INDENT/_DEDENT tokens (lark's PythonIndenter with its state kept per
    call, so that parses may nest, and bad indentation or brackets reported as a SyntaxProblem)."""

    _OPEN = frozenset(("LPAR", "LSQB", "LBRACE"))
    _CLOSE = frozenset(("RPAR", "RSQB", "RBRACE"))
    TAB_LEN = 8

    def __init__(self, definition_indent: int | None = None):
        self.definition_indent = definition_indent

    def process(self, tokens):
        """The tokens with indentation made explicit. With a `definition_indent`, the text is one
        definition and whatever follows it in its file: the stream ends with the definition."""
        depth = 0
        base = self.definition_indent or 0
        levels = [base]
        token = None
        for token in tokens:
            kind = token.type
            if kind == "_NEWLINE":
                if depth > 0:
                    continue
                yield token
                indent_text = token.rsplit("\n", 1)[1]
                indent = indent_text.count(" ") + indent_text.count("\t") * self.TAB_LEN
                if self.definition_indent is not None and indent <= base:
                    break  # back at the definition's own indentation: it has ended
                if indent > levels[-1]:
                    levels.append(indent)
                    yield Tok.make("_INDENT", indent_text, token.end_line, 1, token.end_line)
                    continue
                while indent < levels[-1]:
                    levels.pop()
                    yield Tok.make("_DEDENT", indent_text, token.end_line, 1, token.end_line)
                if indent != levels[-1]:
                    raise SyntaxProblem("unindent does not match any outer indentation level", token.end_line, 1)
                continue
            yield token
            if kind in self._OPEN:
                depth += 1
            elif kind in self._CLOSE:
                depth -= 1
                if depth < 0:
                    raise SyntaxProblem(f"unmatched {str(token)!r}", token.line, token.column)
        line = token.end_line if token is not None else 1
        while len(levels) > 1:
            levels.pop()
            yield Tok.make("_DEDENT", "", line, 1, line)


class Lexer:
    """All of the grammar's terminals as one alternation, in lark's order (priority, then width); a
    NAME spelled like a keyword becomes that keyword's terminal."""

    def __init__(self, parser: Lark):
        name_pattern = re.compile(parser.get_terminal("NAME").pattern.to_regexp())
        self.keywords: dict[str, str] = {}
        alternatives = []
        terminals = sorted(parser.terminals, key=lambda t: (-t.priority, -t.pattern.max_width,
                                                             -len(t.pattern.value), t.name))
        for terminal in terminals:
            pattern = terminal.pattern
            if isinstance(pattern, PatternStr) and name_pattern.fullmatch(pattern.value):
                self.keywords[pattern.value] = terminal.name
                continue
            alternatives.append(f"(?P<{terminal.name}>{pattern.to_regexp()})")
        # spaces before a token are skipped by the same match (most ignored text is those spaces)
        self.master = re.compile("[ \t]*(?:" + "|".join(alternatives) + ")")
        self.ignored = frozenset(parser.lexer_conf.ignore)

    def tokens(self, text: str):
        match = self.master.match
        keywords, ignored = self.keywords, self.ignored
        pos, line, line_start, end = 0, 1, 0, len(text)
        while pos < end:
            m = match(text, pos)
            if m is None:
                raise SyntaxProblem("invalid syntax: unexpected character", line, pos - line_start + 1)
            kind = m.lastgroup
            value = m.group(kind)
            start = m.start(kind)
            newlines = value.count("\n")
            if kind not in ignored:
                if kind == "NAME":
                    kind = keywords.get(value, "NAME")
                yield Tok.make(kind, value, line, start - line_start + 1, line + newlines)
            if newlines:
                line += newlines
                line_start = start + value.rindex("\n") + 1
            pos = m.end()


class _Run:
    """The items of a repetition (lark's `__rule_star_N`), which the rule around it splices in."""

    __slots__ = ("children",)

    def __init__(self, children: list):
        self.children = children


def _direct(callback, size: int, origin: str):
    """lark's child filter for a rule that only drops tokens, as one list comprehension (or nothing,
    when it keeps every child) in front of the builder; a repetition's items kept in a _Run rather
    than a lark Tree; other callbacks as they are."""
    internal = origin.startswith("__")
    if internal and isinstance(callback, partial):
        return _Run
    if not isinstance(callback, ChildFilterLALR_NoPlaceholders):
        return callback
    build = _Run if internal and isinstance(callback.node_builder, partial) else callback.node_builder
    if any(expand for _, expand in callback.to_include):
        return ChildFilterLALR_NoPlaceholders(callback.to_include, build)
    keep = [i for i, _ in callback.to_include]
    if keep == list(range(size)):
        return build
    return lambda children: build([children[i] for i in keep])


class Table:
    """lark's parse table for one start symbol, each action resolved: an int shifts to that state,
    (size, callback, rule name) reduces."""

    def __init__(self, parser: Lark, start: str):
        inner = parser.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> its table-driven _Parser
        table, callbacks = inner.parse_table, inner.callbacks
        self.start = table.start_states[start]
        self.end = table.end_states[start]
        self.actions = {}
        self.passes: dict[tuple, int] = {}
        for state, row in table.states.items():
            self.actions[state] = {symbol: arg if action is Shift else self._reduction(arg, callbacks[arg])
                                   for symbol, (action, arg) in row.items()}

    def _pass_on(self, below: int, top: int, kind: str) -> int:
        """The top state after every one-symbol, value-passing reduction `kind` leads to from `top`."""
        while True:
            entry = self.actions[top].get(kind)
            if entry is None or entry.__class__ is int or entry[1] is not None:
                return top
            top = self.actions[below][entry[2]]

    @staticmethod
    def _reduction(rule, callback) -> tuple:
        """(size, callback, rule name); callback None for a `?rule` matched by one symbol, which passes
        that symbol's value on (most reductions of an expression are these)."""
        size = len(rule.expansion)
        passes_on = rule.options.expand1 and size == 1 and not rule.alias
        return size, None if passes_on else _direct(callback, size, rule.origin.name), rule.origin.name

    def run(self, tokens):
        """Feed `tokens`, then the end of input; returns the start rule's callback result."""
        actions, passes = self.actions, self.passes
        states, values = [self.start], []
        token = None
        for token in tokens:
            kind = token.type
            while True:
                entry = actions[states[-1]].get(kind)
                if entry is None:
                    raise SyntaxProblem(f"invalid syntax: unexpected {str(token)!r}", token.line, token.column)
                if entry.__class__ is int:
                    states.append(entry)
                    values.append(token)
                    break
                size, callback, rule = entry
                if callback is None:
                    # a chain of one-symbol reductions (atom -> power -> ... -> test) replaces the top
                    # state only: its end, for this state below and lookahead, is worked out once
                    key = (states[-2], states[-1], kind)
                    top = passes.get(key)
                    if top is None:
                        top = passes[key] = self._pass_on(states[-2], states[-1], kind)
                    states[-1] = top
                    continue
                if size:
                    children = values[-size:]
                    del values[-size:]
                    del states[-size:]
                    values.append(callback(children))
                else:
                    values.append(callback([]))
                states.append(actions[states[-1]][rule])
        while True:
            entry = actions[states[-1]].get("$END")
            if entry is None or entry.__class__ is int:
                line = token.end_line if token is not None else 1
                raise SyntaxProblem("invalid syntax: unexpected end of input", line, 1)
            size, callback, rule = entry
            if callback is None:
                states.pop()
            elif size:
                children = values[-size:]
                del values[-size:]
                del states[-size:]
                values.append(callback(children))
            else:
                values.append(callback([]))
            states.append(actions[states[-1]][rule])
            if states[-1] == self.end:
                return values[-1]
