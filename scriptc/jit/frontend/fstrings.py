"""f-strings: split `f"a{x!r:>4}b"` into its literal text and its replacement fields."""

from __future__ import annotations

import ast as python_ast

from .lalr import SyntaxProblem

_OPEN = "([{"
_CLOSE = ")]}"


def split_fstring(text: str, prefix: str, token, field) -> list:
    """The parts of one f-string literal token: str for literal text, `field(expression text,
    conversion, format spec, token)` for each `{...}`. Raises a SyntaxProblem for a
    malformed field."""
    body = text[len(prefix):]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[0]
    body = body[len(quote):-len(quote)]
    literal_prefix = prefix.replace("f", "")

    def literal(piece: str) -> str:
        return python_ast.literal_eval(f"{literal_prefix}{quote}{piece}{quote}") if piece else ""

    parts: list = []
    piece_start = i = 0
    while i < len(body):
        ch = body[i]
        if ch in "{}" and body[i + 1:i + 2] == ch:
            parts.append(literal(body[piece_start:i]) + ch)
            i += 2
            piece_start = i
            continue
        if ch == "}":
            raise SyntaxProblem("f-string: single '}' is not allowed", token.line, token.column)
        if ch != "{":
            i += 1
            continue
        parts.append(literal(body[piece_start:i]))
        end = _field_end(body, i + 1)
        if end is None:
            raise SyntaxProblem("f-string: expecting '}'", token.line, token.column)
        expression, conversion, spec = _split_field(body[i + 1:end])
        if "{" in spec:
            raise SyntaxProblem("f-string: nested replacement fields in a format spec are not supported",
                               token.line, token.column)
        parts.append(field(expression, conversion, spec, token))
        i = piece_start = end + 1
    parts.append(literal(body[piece_start:]))
    return parts


def _field_end(body: str, start: int) -> int | None:
    """The index of the `}` closing the field whose expression starts at `start`."""
    depth, quote, i = 0, None, start
    while i < len(body):
        ch = body[i]
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            if ch == "}" and depth == 0:
                return i
            depth -= 1
        i += 1
    return None


def _split_field(field: str) -> tuple[str, str | None, str]:
    """(expression, conversion, format spec) of the text between a field's braces."""
    depth, quote = 0, None
    for i, ch in enumerate(field):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and ch == "!" and field[i + 1:i + 2] != "=":
            rest = field[i + 1:]
            conversion, _, spec = rest.partition(":")
            return field[:i], conversion.strip(), spec
        elif depth == 0 and ch == ":":
            return field[:i], None, field[i + 1:]
    return field, None, ""
