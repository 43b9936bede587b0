"""The state of compiling one function body: the block being filled, variable scopes, the source
position of the construct being compiled, and the helpers every other concern emits IR with."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from scriptc.errors import NotSupportedError, ScriptError
from scriptc.ir.graph import Block, Node, Value
from scriptc.types import Type, type_of_constant

from .. import ast
from ..source import Source
from .values import Refined


def function_globals(fn) -> dict:
    """The names a function's body can see: its module's globals, the scope a script class was scripted
    in (for its methods) and its closure's cells."""
    names = dict(getattr(fn, "__globals__", {}))
    names.update(getattr(fn, "_scriptc_defining_scope", {}))
    closure = getattr(fn, "__closure__", None)
    if closure:
        for name, cell in zip(fn.__code__.co_freevars, closure):
            try:
                names[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled (a name assigned after the def)
                pass
    return names


class BranchScope(dict):
    """The variables bound in one branch of an if or in a comprehension (TorchScript's new environment
    frames): one bound outside keeps its type there."""


class Emitter:
    """Emission and scoping shared by the statement, expression, call and type compilers."""

    def __init__(self, ctx, source: Source, fn, block: Block, self_value=None):
        self.ctx = ctx
        self.source = source
        self.fn = fn
        self.globals = function_globals(fn)
        self.self_value = self_value
        self.self_name = "self"  # what a module method calls its module (its first parameter)
        self.block = block
        self.scopes: list[dict[str, Any]] = [{}]
        self.line, self.col = 1, 1
        self.declared: dict[str, Type] = {}   # annotated variables keep their annotation's type
        self.counter = 0
        self.top_block = block
        self.shared: dict = {}

    # --- errors and positions ---------------------------------------------------------------------
    def error(self, message: str, node: ast.Node | None = None, kind: type = ScriptError) -> ScriptError:
        if node is not None:
            return self.source.error(message, node.line, node.col, kind)
        return self.source.error(message, self.line, self.col, kind)

    def unsupported(self, node: ast.Unsupported) -> ScriptError:
        """The refusal an Unsupported node carries, as torch's NotSupportedError."""
        return self.error(node.message, node, NotSupportedError)

    def called_here(self, callee: str, node: ast.Node) -> str:
        """torch's line for an error inside `callee`, compiled because this code calls it at `node`:
        the call's place, from the enclosing def line down to the call with a caret under it."""
        caller = getattr(self.fn, "__qualname__", "<unknown>").split("<locals>.")[-1]
        lines = self.source.lines
        shown = [lines[node.line - 1]] if 0 < node.line <= len(lines) else []
        indent = len(shown[0]) - len(shown[0].lstrip()) if shown else 0
        for number in range(node.line - 2, -1, -1):
            stripped = lines[number].lstrip()
            if stripped.startswith(("def ", "async def ")) and len(lines[number]) - len(stripped) < indent:
                shown.insert(0, lines[number] if number == node.line - 2 else lines[number] + "\n    ...")
                break
        caret = " " * max(node.col - 1, 0) + "^"
        return (f"'{callee}' is being compiled since it was called from '{caller}'\n"
                f"  File \"{self.source.filename}\", line {node.line + self.source.line_offset}\n"
                + "".join(f"    {text}\n" for text in shown) + f"    {caret}")

    def at(self, node: ast.Node) -> None:
        self.line, self.col = node.line, node.col

    # --- emission --------------------------------------------------------------------------------
    def emit(self, op: str, inputs: list[Value], types: list[Type], attrs: dict | None = None) -> Node:
        node = Node(op, inputs, types, attrs, self.source.location(self.line, self.col))
        self.block.append(node)
        return node

    def emit1(self, op: str, inputs: list[Value], out_type: Type, attrs: dict | None = None) -> Value:
        return self.emit(op, inputs, [out_type], attrs).output

    def const(self, value) -> Value:
        return self.emit("prim::Constant", [], [type_of_constant(value)], {"value": value}).output

    def shared_const(self, value) -> Value:
        """A constant for an op's default argument, made once per function at the top of its block."""
        key = (type(value), repr(value))
        shared = self.shared.get(key)
        if shared is None:
            node = Node("prim::Constant", [], [type_of_constant(value)], {"value": value})
            self.top_block.prepend(node)
            shared = self.shared[key] = node.output
        return shared

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"${prefix}{self.counter}"

    @contextmanager
    def inside(self, block: Block, scope: dict | None = None):
        """Compile into `block` with a new innermost scope; yields the scope."""
        outer = self.block
        self.block = block
        scope = {} if scope is None else scope
        self.scopes.append(scope)
        try:
            yield scope
        finally:
            self.scopes.pop()
            self.block = outer

    # --- variables ----------------------------------------------------------------------------------
    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def read(self, name: str):
        """A variable's current value, emitting the prim::Refine of a refined variable on first read."""
        for scope in reversed(self.scopes):
            if name in scope:
                value = scope[name]
                if isinstance(value, Refined):
                    value = self.emit1("prim::Refine", [value.value], value.type)
                    value.name = name if not name.startswith("$") else None
                    self.scopes[-1][name] = value
                return value
        return None

    def binding_before_branch(self, name: str):
        """What `name` was bound to before the if-branches compiling now, when it is bound outside them
        and not yet inside; None otherwise (bound in this branch, in straight-line code, or nowhere)."""
        crossed_branch = False
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name] if crossed_branch else None
            crossed_branch = crossed_branch or isinstance(scope, BranchScope)
        return None

    def bind(self, name: str, value) -> None:
        """Bind `name` in the innermost scope (no type checks: see Statements.assign_name)."""
        if isinstance(value, Value) and value.node is not None and value.name is None and not name.startswith("$"):
            value.name = name
        self.scopes[-1][name] = value

    def defined_here(self, name: str) -> bool:
        return name in self.scopes[-1]
