"""The source text jit.script reads: where it came from, and ScriptErrors that point into it."""

from __future__ import annotations

import inspect
import linecache
import re
from dataclasses import dataclass, field
from pathlib import Path

from scriptc.errors import ScriptError
from scriptc.ir.graph import SourceLocation

_TYPE_COMMENT = re.compile(r"#\s*type:\s*(?P<type>.*?)\s*$")


@dataclass
class Source:
    """Source text; `line_offset` maps its line 1 back to the file's line. `definition_indent`: the
    text is a file from one definition's first line on, indented this much - parsing reads that
    definition and stops where it ends."""

    text: str
    filename: str
    line_offset: int = 0
    lines: list = field(default_factory=list)
    definition_indent: int | None = None

    def __post_init__(self):
        if not self.lines:
            self.lines = self.text.splitlines()
        self.basename = Path(self.filename).name
        self._commented: set | None = None  # numbers of the lines with "type:" in them

    def error(self, message: str, line: int | None = None, col: int | None = None,
              kind: type = ScriptError) -> ScriptError:
        """A ScriptError (or its subclass `kind`) at (line, col) of this text (1-based), showing the
        line and a caret."""
        if line is None:
            return kind(message, self.filename, None, None)
        source_line = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return kind(message, self.filename, line + self.line_offset, col, source_line)

    def location(self, line: int, col: int) -> SourceLocation:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return SourceLocation(self.basename, line + self.line_offset, col, text)

    def type_comment(self, first: int, last: int) -> str | None:
        """The `# type: ...` comment on lines first..last (1-based, inclusive), if any ('ignore' is not one)."""
        comments = self.type_comments(first, last)
        return comments[0][1] if comments else None

    def type_comments(self, first: int, last: int) -> list[tuple[int, str]]:
        """(line, text) of each `# type: ...` comment on lines first..last (1-based, inclusive)."""
        if self._commented is None:
            self._commented = {n for n, line in enumerate(self.lines, 1) if "type:" in line}
        found = []
        for number in sorted(self._commented):
            if not first <= number <= last:
                continue
            line = self.lines[number - 1]
            match = _TYPE_COMMENT.search(line)
            if match is None or _inside_string(line, match.start()):
                continue
            text = match.group("type")
            if text and not text.startswith("ignore"):
                found.append((number, text))
        return found


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


_DEF = re.compile(r"[ \t]*(async[ \t]+)?def\b")


def get_source(fn) -> Source:
    """A function's source: its file from its `def` line on (the parser stops at the function's end,
    so no tokenizing pass is needed to find it); a ScriptError when there is none to read."""
    what = getattr(fn, "__qualname__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    try:
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        raise ScriptError(f"jit.script could not read the source of {what!r}: {exc}") from None
    module = inspect.getmodule(fn)
    lines = linecache.getlines(filename, module.__dict__ if module is not None else None)
    if code is None or not lines:
        raise ScriptError(f"jit.script could not read the source of {what!r}: could not get source code")
    if code.co_name == "<lambda>":  # (no `def` to read: the next one in the file is another function's)
        raise ScriptError(f"Expected a single top-level function: {filename}:{code.co_firstlineno}")
    start = code.co_firstlineno - 1  # the first decorator's line: the `def` follows the decorators
    while start < len(lines) and not _DEF.match(lines[start]):
        start += 1
    if start >= len(lines):
        raise ScriptError(f"jit.script could not read the source of {what!r}: no `def` at line "
                          f"{code.co_firstlineno} of {filename}")
    first = lines[start]
    indent = len(first.expandtabs(8)) - len(first.expandtabs(8).lstrip())
    return Source("".join(lines[start:]), filename, start, definition_indent=indent)
