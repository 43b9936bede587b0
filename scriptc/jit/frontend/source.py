"""The source text jit.script reads: where it came from, and ScriptErrors that point into it."""

from __future__ import annotations

import inspect
import re
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from scriptc.errors import ScriptError
from scriptc.ir.graph import SourceLocation

_TYPE_COMMENT = re.compile(r"#\s*type:\s*(?P<type>.*?)\s*$")


@dataclass
class Source:
    """Dedented source text; `line_offset` maps its line 1 back to the file's line."""

    text: str
    filename: str
    line_offset: int = 0
    lines: list = field(default_factory=list)

    def __post_init__(self):
        if not self.lines:
            self.lines = self.text.splitlines()

    def error(self, message: str, line: int | None = None, col: int | None = None) -> ScriptError:
        """A ScriptError at (line, col) of this text (1-based), showing the line and a caret."""
        if line is None:
            return ScriptError(message, self.filename, None, None)
        source_line = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return ScriptError(message, self.filename, line + self.line_offset, col, source_line)

    def location(self, line: int, col: int) -> SourceLocation:
        return SourceLocation(Path(self.filename).name, line + self.line_offset, col)

    def type_comment(self, first: int, last: int) -> str | None:
        """The `# type: ...` comment on lines first..last (1-based, inclusive), if any ('ignore' is not one)."""
        for number in range(max(first, 1), min(last, len(self.lines)) + 1):
            line = self.lines[number - 1]
            match = _TYPE_COMMENT.search(line)
            if match is None or _inside_string(line, match.start()):
                continue
            text = match.group("type")
            if text and not text.startswith("ignore"):
                return text
        return None


def _inside_string(line: str, index: int) -> bool:
    """Whether position `index` of one line falls inside a quoted string (quotes counted before it)."""
    quote = None
    i = 0
    while i < index:
        ch = line[i]
        if quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
        elif ch == "\\":
            i += 1
        i += 1
    return quote is not None


def get_source(obj) -> Source:
    """The source of a function or class, as inspect finds it; a ScriptError when it cannot."""
    what = getattr(obj, "__qualname__", None) or repr(obj)
    try:
        lines, start = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError, tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise ScriptError(f"jit.script could not read the source of {what!r}: {exc}") from None
    text = textwrap.dedent("".join(lines))
    return Source(text, filename, start - 1 if start else 0)
