"""The typed errors scriptc raises to its users (DESIGN.md, "Errors")."""

from __future__ import annotations


class ScriptcError(Exception):
    """Base of every error scriptc raises on purpose."""


class ShapeError(ScriptcError, RuntimeError):
    """Shapes that do not fit an op: broadcasting, matmul, reshape, a bad dim.

    A RuntimeError too, as PyTorch raises RuntimeError for these.
    """


class LinAlgError(ScriptcError, RuntimeError):
    """A linear-algebra routine failed on its input (a singular or non-positive-definite matrix).

    torch.linalg.LinAlgError; a RuntimeError too, as in PyTorch.
    """


class ArgumentError(ScriptcError, ValueError):
    """A bad argument value an op's kernel refuses on purpose, where PyTorch raises ValueError.

    (Other ValueErrors out of a kernel are numpy's, which dispatch rewords through the op's shape rule.)
    """


class SourceError(ScriptcError):
    """An error that points at a place in some text: file:line:col, the line and a caret."""

    def __init__(self, message: str, filename: str | None = None, line: int | None = None,
                 col: int | None = None, source_line: str | None = None):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        self.call_stack: list[str] = []
        super().__init__(self._render())

    def add_caller(self, text: str) -> None:
        """Append where the failing code was reached from (torch's "'f' is being compiled since it
        was called from 'g'" lines), innermost first."""
        self.call_stack.append(text)
        self.args = (self._render(),)

    def _render(self) -> str:
        text = self.message
        if self.line is not None:
            text = f"{self.filename or '<unknown>'}:{self.line}:{self.col or 0}: {self.message}"
            if self.source_line is not None:
                caret = " " * max((self.col or 1) - 1, 0) + "^"
                text += f"\n    {self.source_line.rstrip()}\n    {caret}"
        return "\n".join([text, *getattr(self, "call_stack", ())])


class ScriptError(SourceError, RuntimeError):
    """jit.script refused the source: unsupported syntax, a type error, a bad op call.

    A RuntimeError too, as torch.jit.script raises RuntimeError for what it cannot compile.
    """


class ScriptValueError(ScriptError, ValueError):
    """A refusal torch raises as a ValueError (an instance attribute annotated outside __init__)."""


class ScriptTypeError(ScriptError, TypeError):
    """A refusal torch raises as a TypeError (jit.script given what is no function, module or class)."""


class ScriptAttributeError(ScriptError, AttributeError):
    """A refusal torch raises as an AttributeError (a submodule lacking a method of the module
    interface its attribute is annotated with)."""


class FrontendError(ScriptError):
    """jit.script refused a construct of the source (torch.jit.frontend.FrontendError)."""


class NotSupportedError(FrontendError):
    """jit.script met Python syntax TorchScript does not support (torch.jit.frontend.NotSupportedError)."""


class JitError(ScriptcError, RuntimeError):
    """An exception raised by scripted code (`raise ...`, a failed `assert`): torch.jit.Error.

    Its message is TorchScript's: the exception's qualified name and its arguments.
    """


class ArchiveError(ScriptcError, RuntimeError):
    """A `.sc` archive is malformed, truncated, too new, or inconsistent.

    A RuntimeError too, as torch.jit.load raises RuntimeError for a file it cannot read as an archive.
    """


class SignatureError(ScriptcError, RuntimeError):
    """A call's input does not fit the method's signature (its dtype, rank, a fixed dim, its type).

    Names the input, what it expects and what it got (`input`, `expected`, `got`); a RuntimeError,
    as TorchScript raises for arguments that do not fit a method's schema.
    """

    def __init__(self, method: str, input: str, expected: str, got: str):
        self.method, self.input, self.expected, self.got = method, input, expected, got
        super().__init__(f"{method}(): input '{input}' expects {expected}, got {got}")


class CallError(ScriptcError, TypeError, RuntimeError):
    """A call of a compiled method that does not fit its inputs: too many or too few values, an
    unknown keyword or one given twice.

    A TypeError, as Python raises for such a call, and a RuntimeError, as TorchScript raises for it.
    """


class ServeError(ScriptcError):
    """A request the server cannot serve; carries the HTTP status it maps to."""

    def __init__(self, message: str, status: int = 400):
        self.status = status
        super().__init__(message)


class TracerWarning(UserWarning):
    """A traced value depended on tensor data (Python control flow on a tensor)."""
