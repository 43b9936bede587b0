"""Errors raised while scripted code runs name where in the user's source they happened, as TorchScript's do.

TorchScript's interpreter prefixes an error from a failing operation with "The following operation
failed in the TorchScript interpreter." and a traceback of the scripted calls, innermost last,
each showing the source line with the failing expression marked, and ends with the original
error. The exception keeps its class (a user's `except RuntimeError` still catches it), except an
op's IndexError, which TorchScript's interpreter raises as a RuntimeError (`x[10]` on a 3-row tensor:
IndexError in eager code, RuntimeError in scripted code); its message grows. The interpreter calls
`add_frame` for the node an exception leaves, raising what it returns, and
`close_function` when it leaves a function's graph: the first node of each function on the way
out is the one that names its line (enclosing if/loop nodes of the same function add nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scriptc.errors import JitError
from scriptc.ir.graph import Node

HEADER = ("The following operation failed in the TorchScript interpreter.\n"
          "Traceback of TorchScript (most recent call last):\n")


@dataclass
class _ScriptTraceback:
    message: str  # the last line: the original error, named as TorchScript names it
    frames: list[str] = field(default_factory=list)  # outermost call first
    function_open: bool = False  # the innermost function still unwinding has named its line


def _rewritable(exc: BaseException) -> bool:
    # an exception whose message is its one string argument (KeyError's str() is a repr: left alone)
    return (isinstance(exc, Exception) and not isinstance(exc, KeyError) and len(exc.args) == 1
            and isinstance(exc.args[0], str))


def _builtin_name(exc: BaseException) -> str:
    """The Python exception class torch would name: scriptc's own errors (ShapeError) by the builtin
    class they extend (RuntimeError)."""
    return next(kind.__name__ for kind in type(exc).__mro__ if kind.__module__ == "builtins")


def _frame(node: Node, function: str) -> str:
    loc = node.loc
    lines = [f'  File "{loc.file}", line {loc.line}, in {function}']
    if loc.text:
        source = loc.text.rstrip()
        indent = len(source) - len(source.lstrip())
        lines.append("    " + source.lstrip())
        lines.append("    " + " " * max(loc.col - 1 - indent, 0) + "~ <--- HERE")
    return "\n".join(lines)


def script_error(exc: BaseException) -> BaseException:
    """The exception scripted code raises for `exc` from an op: a RuntimeError for an IndexError (as
    TorchScript's interpreter raises it), else `exc` itself."""
    if isinstance(exc, IndexError) and _rewritable(exc):
        return RuntimeError(exc.args[0])
    return exc


def add_frame(exc: BaseException, node: Node, function: str) -> BaseException:
    """Name `node`, in scripted function `function`, in the traceback of `exc` as it unwinds; the
    exception to raise in its place (`exc` itself, or what `script_error` makes of it)."""
    exc = script_error(exc)
    if node.loc is None or not _rewritable(exc):
        return exc
    state = getattr(exc, "_script_traceback", None)
    if state is None:
        original = exc.args[0]
        message = original if isinstance(exc, JitError) else f"{_builtin_name(exc)}: {original}"
        state = _ScriptTraceback(message)
        exc._script_traceback = state
    if not state.function_open:
        state.frames.insert(0, _frame(node, function))
        state.function_open = True
        exc.args = (HEADER + "\n".join(state.frames) + "\n" + state.message,)
    return exc


def close_function(exc: BaseException) -> None:
    """`exc` leaves a scripted function: the node that called it is the next to name its line."""
    state = getattr(exc, "_script_traceback", None)
    if state is not None:
        state.function_open = False
