"""torch.jit.CompilationUnit: TorchScript functions compiled from source text."""

from __future__ import annotations

import ast
import itertools
import linecache
import sys
import textwrap

from scriptc.errors import ScriptError

_UNITS = itertools.count()


class CompilationUnit:
    """Functions compiled from TorchScript source text, reached as attributes (`cu.foo(x)`).

    `CompilationUnit(src)` compiles every `def` in `src` at once; names the functions use that they
    do not define resolve in the caller's scope, as torch.jit.CompilationUnit resolves them. `define`
    adds more source later; `find_function(name)` returns a function or None."""

    def __init__(self, lang: str | None = None, _frames_up: int = 0):
        self._functions: dict = {}
        frame = sys._getframe(1 + _frames_up)
        self._scope = {**frame.f_globals, **frame.f_locals}
        if lang is not None:
            self._define(lang)

    def define(self, src: str, rcb=None, _frames_up: int = 0) -> None:
        """Compile the functions of `src` into this unit (names resolve in the caller's scope)."""
        frame = sys._getframe(1 + _frames_up)
        self._scope.update({**frame.f_globals, **frame.f_locals})
        self._define(src)

    def _define(self, src: str) -> None:
        from scriptc.jit.api import script

        functions = define_functions(src, self._scope, "scriptc.jit.CompilationUnit")
        self._scope.update(functions)
        for name, fn in functions.items():
            self._functions[name] = script(fn)

    def find_function(self, name: str):
        """The compiled function `name`, or None."""
        return self._functions.get(name)

    def __getattr__(self, name: str):
        functions = self.__dict__.get("_functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"'CompilationUnit' has no function '{name}'")


def define_functions(src: str, scope: dict, origin: str) -> dict:
    """The Python functions the `def`s of TorchScript source text `src` define (names they use resolve
    in `scope`), by name, their source readable by the script compiler; anything but a `def` at the top
    is a ScriptError. `origin` names the source in error locations."""
    text = textwrap.dedent(src)
    filename = f"<{origin} {next(_UNITS)}>"
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise ScriptError(f"invalid syntax: {exc.msg}", filename, exc.lineno, exc.offset, exc.text) from None
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            line = text.splitlines()[stmt.lineno - 1]
            raise ScriptError("expected def", filename, stmt.lineno, stmt.col_offset + 1, line)
    for node in ast.walk(tree):
        # `for x in a, b:` reads as several iterables in torch's string frontend, which refuses them
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple) and \
                not ast.get_source_segment(text, node.iter).startswith("("):
            line = text.splitlines()[node.lineno - 1]
            raise ScriptError("List of iterables is not supported currently", filename, node.lineno,
                              node.col_offset + 1, line)
    # the functions' source is read back through linecache, as for functions defined in a file
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    namespace = dict(scope)
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102  (defines functions only: checked above)
    return {stmt.name: namespace[stmt.name] for stmt in tree.body}
