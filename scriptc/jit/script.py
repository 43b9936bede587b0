"""jit.script: compile the TorchScript subset of Python (grammar.lark) to the IR, keeping control flow.

The compiler walks lark's parse tree directly. Variables live in an Env per
block; a variable assigned in a branch becomes a prim::If output, one
assigned in a loop body a prim::Loop carried value. break, continue and early
return are lowered to flag variables that the same SSA machinery carries, with
the statements after a possible exit guarded by `if not flag`. Calls resolve
through the op table's schemas; module methods and submodules are inlined,
free helper functions become prim::Call of their own graph.
"""

from __future__ import annotations

import builtins
import inspect
import math
import textwrap
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from scriptc import ops
from scriptc.config import parser_cache
from scriptc.errors import ScriptError
from scriptc.ir.graph import Block, Graph, Node, SourceLocation, Value
from scriptc.ir.verify import fits
from scriptc.ops.rules import Unknown
from scriptc.types import (
    Bool,
    DictType,
    DType,
    Float,
    Int,
    ListType,
    ModuleType,
    NoneType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
    dtype,
    type_of_constant,
)

INT64_MAX = 2 ** 63 - 1


@lru_cache(maxsize=1)
def _parser():
    from lark import Lark
    from lark.indenter import PythonIndenter

    grammar = Path(__file__).with_name("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", postlex=PythonIndenter(), start="file_input", propagate_positions=True,
                cache=parser_cache("script-grammar"))


# --- compile-time values that are not IR values ----------------------------------------------

@dataclass
class SugaredModule:
    """A module reached through `self`: its IR value (for GetAttr) and the Python object."""

    module: Any
    value: Value
    path: str


@dataclass
class SugaredMethod:
    owner: SugaredModule
    fn: Any


@dataclass
class Namespace:
    """`torch`/`scriptc`, `torch.nn.functional`, `math`, `typing`: attribute access picks a callee."""

    kind: str


@dataclass
class PyFunction:
    fn: Any


@dataclass
class Builtin:
    name: str


@dataclass
class SugaredTuple:
    """A compile-time tuple (of modules, or mixed values), iterated by unrolling."""

    items: list


@dataclass
class DTypeConst:
    value: dtype


def ignore(fn):
    """@jit.ignore: leave this function in Python; a module that calls it runs but cannot be saved."""
    fn._scriptc_ignore = True
    return fn


def export(fn):
    """@jit.export: compile this method too (callable on the ScriptModule and saved with it)."""
    fn._scriptc_export = True
    return fn


# --- source handling ------------------------------------------------------------------------------

@dataclass
class Source:
    text: str
    filename: str
    line_offset: int
    lines: list = field(default_factory=list)

    def error(self, message: str, meta=None) -> ScriptError:
        if meta is None or getattr(meta, "empty", True):
            return ScriptError(message, self.filename, None, None)
        line = meta.line
        source_line = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return ScriptError(message, self.filename, line + self.line_offset, meta.column, source_line)

    def location(self, meta) -> SourceLocation | None:
        if meta is None or getattr(meta, "empty", True):
            return None
        return SourceLocation(Path(self.filename).name, meta.line + self.line_offset, meta.column)


def get_source(fn) -> Source:
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise ScriptError(f"jit.script could not read the source of {getattr(fn, '__qualname__', fn)!r}: {exc}") \
            from None
    text = textwrap.dedent("".join(lines))
    filename = inspect.getsourcefile(fn) or "<unknown>"
    return Source(text, filename, start - 1, text.splitlines())


def parse_function(fn, source: Source):
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

    text = source.text if source.text.endswith("\n") else source.text + "\n"
    try:
        tree = _parser().parse(text)
    except UnexpectedToken as exc:
        raise ScriptError(f"invalid syntax: unexpected {exc.token!r}", source.filename, exc.line + source.line_offset,
                          exc.column, source.lines[exc.line - 1] if 0 < exc.line <= len(source.lines) else None) \
            from None
    except UnexpectedCharacters as exc:
        raise ScriptError("invalid syntax: unexpected character", source.filename, exc.line + source.line_offset,
                          exc.column, source.lines[exc.line - 1] if 0 < exc.line <= len(source.lines) else None) \
            from None
    except UnexpectedInput as exc:
        raise ScriptError(f"invalid syntax: {exc}", source.filename) from None
    for item in tree.children:
        node = item
        if getattr(node, "data", None) == "decorated":
            node = node.children[-1]
        if getattr(node, "data", None) == "funcdef":
            return node
        if getattr(node, "data", None) in ("async_funcdef", "async_stmt"):
            raise source.error("async functions are not supported", node.meta)
    raise ScriptError(f"jit.script: no function definition found in the source of {fn!r}", source.filename)


# --- types from annotations ------------------------------------------------------------------------

_SIMPLE_TYPES = {"Tensor": TensorType(), "int": Int, "float": Float, "bool": Bool, "str": Str, "None": NoneType,
                 "Any": Scalar}


def unify(a: Type, b: Type) -> Type | None:
    """The type both a and b are (TorchScript's unification), or None when there is none."""
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return TensorType(a.dtype if a.dtype == b.dtype else None,
                          a.shape if a.shape == b.shape else None)
    if a == NoneType and not isinstance(b, OptionalType):
        return OptionalType(b)
    if b == NoneType and not isinstance(a, OptionalType):
        return OptionalType(a)
    if isinstance(a, OptionalType) and (b == NoneType or unify(a.elem, b) is not None):
        return OptionalType(unify(a.elem, b) if b != NoneType else a.elem)
    if isinstance(b, OptionalType):
        return unify(b, a)
    if isinstance(a, ListType) and isinstance(b, ListType):
        elem = unify(a.elem, b.elem)
        return ListType(elem) if elem is not None else None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        return TupleType(tuple(elems)) if all(e is not None for e in elems) else None
    return None


class Compiler:
    """Compiles one function body into the current block of a graph."""

    def __init__(self, ctx: "ScriptContext", source: Source, fn, self_value: SugaredModule | None):
        self.ctx = ctx
        self.source = source
        self.fn = fn
        self.globals = dict(getattr(fn, "__globals__", {}))
        closure = getattr(fn, "__closure__", None)
        if closure:
            for name, cell in zip(fn.__code__.co_freevars, closure):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass
        self.self_value = self_value
        self.block: Block | None = None
        self.env: list[dict[str, Any]] = []
        self.loop_flags: list[tuple[str, str]] = []
        self.return_flag: str | None = None
        self.return_type: Type | None = None
        self.return_types: list[Type] = []
        self.counter = 0
        self.meta = None

    # --- errors, emission, environment -------------------------------------------------------
    def error(self, message: str, meta=None) -> ScriptError:
        return self.source.error(message, meta if meta is not None else self.meta)

    def emit(self, op: str, inputs: list[Value], types: list[Type], attrs=None) -> Node:
        node = Node(op, inputs, types, attrs, self.source.location(self.meta))
        self.block.append(node)
        return node

    def const(self, value) -> Value:
        return self.emit("prim::Constant", [], [type_of_constant(value)], {"value": value}).output

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"${prefix}{self.counter}"

    def lookup(self, name: str):
        for scope in reversed(self.env):
            if name in scope:
                return scope[name]
        return None

    def assign(self, name: str, value, meta=None) -> None:
        previous = self.lookup(name)
        if isinstance(previous, Value) and isinstance(value, Value) and not name.startswith("$"):
            if unify(previous.type, value.type) is None and not fits(value.type, previous.type):
                raise self.error(f"Variable '{name}' previously had type {previous.type} but is now being assigned "
                                 f"to a value of type {value.type}", meta)
        if isinstance(value, Value) and value.node is not None and value.name is None and not name.startswith("$"):
            value.name = name
        self.env[-1][name] = value

    # --- entry points -------------------------------------------------------------------------------------
    def compile_function(self, tree, args: dict[str, Any], declared_return: Type | None) -> list[Value]:
        """Compile the body into self.block with `args` bound; returns the returned values."""
        self.env = [dict(args)]
        body = _suite(tree.children[-1])
        self.return_type = declared_return
        needs_flags = _has_non_tail_return(body)
        if needs_flags:
            self.return_flag = self.fresh("returned")
            self.assign(self.return_flag, self.const(False))
            if self.return_type is None:
                owner = self.self_value.module if self.self_value is not None else None
                self.return_type = _discover_return_type(self.fn, self.ctx, owner)
            self.assign("$retval", self.emit("prim::Uninitialized", [], [self.return_type]).output)
        result = self.compile_body(body, tail=True)
        if needs_flags:
            return [self.lookup("$retval")]
        if result is None:
            return [self.const(None)]
        return [result]

    def compile_body(self, stmts, tail: bool = False) -> Value | None:
        """Compile statements; returns the value of a tail `return` (flag-free returns), or RAISED.
        `tail`: these statements end the function, so a last if/else may return from both branches."""
        for i, stmt in enumerate(stmts):
            result = self.stmt(stmt, tail=tail and i == len(stmts) - 1)
            if result is not None:
                return result
            rest = stmts[i + 1:]
            if rest and _may_exit(stmt):
                # After `if x is None: return ...`, x is known not to be None.
                refined = self.refinements(stmt.children[0])[1] if _is_guard_clause(stmt) else {}
                guard = self.not_exited()

                def rest_body(rest=rest, refined=refined):
                    self.env[-1].update(refined)
                    return self.compile_body(rest, tail)
                self.emit_if_statement(guard, rest_body, None)
                return None
        return None

    def not_exited(self) -> Value | None:
        """A bool Value that is True when no break/continue/return has fired (None: one surely has)."""
        flags = []
        if self.return_flag is not None:
            flags.append(self.return_flag)
        if self.loop_flags:
            flags.extend(self.loop_flags[-1])
        values = [self.lookup(f) for f in flags if self.lookup(f) is not None]
        if not values:
            return self.const(True)
        any_value = values[0]
        for v in values[1:]:
            any_value = self.emit("or.scalar", [any_value, v], [Bool]).output
        return self.emit("not.scalar", [any_value], [Bool]).output

    # --- statements ------------------------------------------------------------------------------------
    def stmt(self, tree, tail: bool = False):
        self.meta = tree.meta
        kind = tree.data
        handler = getattr(self, f"stmt_{kind}", None)
        if handler is None:
            raise self.error(_UNSUPPORTED_STATEMENTS.get(kind, f"'{kind}' statements are not supported"), tree.meta)
        return handler(tree, tail) if kind in ("return_stmt", "if_stmt") else handler(tree)

    def stmt_expr_stmt(self, tree):
        self.expr(tree.children[0])

    def stmt_pass_stmt(self, tree):
        return None

    def stmt_assign_stmt(self, tree):
        inner = tree.children[0]
        if inner.data == "assign":
            *targets, value_tree = inner.children
            if getattr(value_tree, "data", None) in ("yield_expr", "yield_from"):
                raise self.error("yield is not supported", value_tree.meta)
            value = self.expr(value_tree)
            for target in targets:
                self.assign_target(target, value)
        elif inner.data == "annassign":
            target, annotation, value_tree = inner.children
            declared = self.annotation_type(annotation)
            if value_tree is None:
                raise self.error("an annotated assignment needs a value", inner.meta)
            value = self.expr(value_tree, expected=declared)
            if isinstance(value, Value) and not fits(value.type, declared):
                raise self.error(f"Variable '{_target_name(target)}' is annotated with type {declared} but is assigned "
                                 f"a value of type {value.type}", inner.meta)
            if isinstance(value, Value) and value.type != declared:
                value = self.emit("prim::Refine", [value], [declared]).output
            self.assign_target(target, value)
        else:
            target, op_token, value_tree = inner.children
            op = str(op_token.children[0] if hasattr(op_token, "children") else op_token)[:-1]
            result = self.binary(op, self.expr(target), self.expr(value_tree), inner.meta)
            self.assign_target(target, result)

    def assign_target(self, target, value) -> None:
        kind = getattr(target, "data", None)
        if kind == "var":
            self.assign(str(target.children[0].children[0]), value, target.meta)
        elif kind in ("tuple", "list", "testlist_tuple", "exprlist"):
            items = [c for c in target.children if c is not None]
            values = self.unpack(value, len(items), target.meta)
            for t, v in zip(items, values):
                self.assign_target(t, v)
        elif kind == "getitem":
            container = self.expr(target.children[0])
            if isinstance(container, Value) and isinstance(container.type, TensorType):
                self.tensor_setitem(container, target.children[1], value, target.meta)
            else:
                raise self.error("only tensors support item assignment in scriptc", target.meta)
        elif kind == "getattr":
            raise self.error("assigning to attributes is not supported (modules are read-only in scripts)",
                             target.meta)
        elif kind == "star_expr":
            raise self.error("starred assignment targets are not supported", target.meta)
        else:
            raise self.error(f"cannot assign to {kind}", getattr(target, "meta", None))

    def unpack(self, value, count: int, meta) -> list:
        if isinstance(value, SugaredTuple):
            if len(value.items) != count:
                raise self.error(f"cannot unpack {len(value.items)} values into {count}", meta)
            return value.items
        if not isinstance(value, Value):
            raise self.error("cannot unpack this value", meta)
        t = value.type
        if isinstance(t, TupleType):
            if len(t.elems) != count:
                raise self.error(f"cannot unpack a tuple of {len(t.elems)} values into {count}", meta)
            return self.emit("prim::TupleUnpack", [value], list(t.elems)).outputs
        if isinstance(t, ListType):
            return self.emit("prim::ListUnpack", [value], [t.elem] * count).outputs
        raise self.error(f"cannot unpack a value of type {t}", meta)

    def stmt_return_stmt(self, tree, tail):
        value_tree = tree.children[0]
        value = self.const(None) if value_tree is None else self.expr(value_tree)
        value = self.as_value(value, tree.meta)
        if self.return_type is not None and not fits(value.type, self.return_type) and \
                unify(value.type, self.return_type) != self.return_type:
            raise self.error(f"Return value was annotated as having type {self.return_type} but is actually of "
                             f"type {value.type}", tree.meta)
        self.return_types.append(value.type)
        if self.return_flag is None:
            if not tail:
                raise self.error("internal: return outside tail position without flags", tree.meta)
            return value
        self.assign("$retval", self.coerce(value, self.return_type))
        self.assign(self.return_flag, self.const(True))
        return None

    def coerce(self, value: Value, target: Type | None) -> Value:
        if target is None or value.type == target:
            return value
        return self.emit("prim::Refine", [value], [target]).output

    def stmt_raise_stmt(self, tree):
        exc = tree.children[0]
        message = "Exception"
        if exc is not None:
            message = self.exception_message(exc)
        self.emit("prim::RaiseException", [], [], {"message": message})
        return RAISED

    def exception_message(self, tree) -> str:
        if getattr(tree, "data", None) == "funccall":
            callee = tree.children[0]
            name = _dotted(callee) or "Exception"
            args = tree.children[1]
            parts = []
            if args is not None:
                for a in args.children:
                    if getattr(a, "data", None) in ("string", "string_concat"):
                        parts.append(_string_value(a, allow_template=True))
                    else:
                        parts.append("<value>")
            return f"{name}: {' '.join(parts)}" if parts else name
        return _dotted(tree) or "Exception"

    def stmt_assert_stmt(self, tree):
        cond_tree, msg_tree = tree.children
        cond = self.as_bool(self.expr(cond_tree), tree.meta)
        message = "AssertionError"
        if msg_tree is not None and getattr(msg_tree, "data", None) in ("string", "string_concat"):
            message = f"AssertionError: {_string_value(msg_tree, allow_template=True)}"

        def fail():
            self.emit("prim::RaiseException", [], [], {"message": message})
        self.emit_if_statement(self.emit("not.scalar", [cond], [Bool]).output, fail, None)

    def stmt_if_stmt(self, tree, tail):
        cond_tree, then_suite, elifs, else_suite = tree.children
        branches = [(cond_tree, then_suite)] + [(e.children[0], e.children[1]) for e in elifs.children]
        return self.compile_if_chain(branches, else_suite, tail, tree.meta)

    def compile_if_chain(self, branches, else_suite, tail, meta):
        (cond_tree, then_suite), rest = branches[0], branches[1:]
        refinements = self.refinements(cond_tree)
        cond = self.expr(cond_tree)
        static = self.static_bool(cond)

        def then_body():
            self.env[-1].update(refinements[0])
            return self.compile_body(_suite(then_suite), tail)

        def else_body():
            self.env[-1].update(refinements[1])
            if rest:
                return self.compile_if_chain(rest, else_suite, tail, meta)
            return self.compile_body(_suite(else_suite), tail) if else_suite is not None else None

        if static is not None:
            # A condition known at compile time (isinstance, `is None` on a non-Optional): one branch only.
            return then_body() if static else else_body()
        cond = self.as_bool(cond, meta)
        returns_value = tail and self.return_flag is None and _ends_with_return(
            [_IfView(branches, else_suite)])
        return self.emit_if_statement(cond, then_body, else_body, returns_value, meta)

    def emit_if_statement(self, cond: Value, then_body, else_body, returns_value: bool = False, meta=None):
        """prim::If with SSA merging of the variables either branch assigns."""
        node = Node("prim::If", [cond], [], None, self.source.location(self.meta))
        self.block.append(node)
        outer_block = self.block
        results, scopes = [], []
        for body in (then_body, else_body):
            block = node.add_block()
            self.block = block
            self.env.append({})
            result = body() if body is not None else None
            results.append(result)
            scopes.append(self.env.pop())
        self.block = outer_block
        if returns_value:
            if results[0] is RAISED and results[1] is RAISED:
                return RAISED
            for index, result in enumerate(results):
                if result is RAISED:
                    # This branch raises: it never produces a value, so any placeholder of the right type will do.
                    other = results[1 - index]
                    self.block = node.blocks[index]
                    results[index] = self.emit("prim::Uninitialized", [], [other.type]).output if other is not None \
                        else None
                    self.block = outer_block
            if results[0] is None or results[1] is None:
                raise self.error("both branches of a tail `if` must return a value", meta)
            types = unify(results[0].type, results[1].type)
            if types is None:
                raise self.error(f"the branches return different types: {results[0].type} and {results[1].type}",
                                 meta)
            for block, value in zip(node.blocks, results):
                block.add_return(value)
            return node.add_output(types)
        names = []
        for scope in scopes:
            for name in scope:
                if name not in names:
                    names.append(name)
        raised = [r is RAISED for r in results]
        for name in names:
            outer = self.lookup(name)
            values = []
            for scope in scopes:
                v = scope.get(name, None)
                values.append(outer if v is None else v)
            assigned = [v is not outer and not _is_refinement_of(v, outer) for v in values]
            if not any(assigned):
                continue  # only refined (or only read): the outer variable is unchanged
            for index, v in enumerate(values):
                if isinstance(v, _LazyRefine):
                    self.block = node.blocks[index]
                    values[index] = self.emit("prim::Refine", [v.value], [v.value.type.elem]).output
                    self.block = outer_block
            if any(raised) and not all(raised):
                # A branch that raises never reaches the join: the other branch's value flows on.
                live = values[raised.index(False)]
                if not isinstance(live, Value):
                    continue
                dead = raised.index(True)
                self.block = node.blocks[dead]
                values[dead] = self.emit("prim::Uninitialized", [], [live.type]).output
                self.block = outer_block
            if any(v is None for v in values):
                continue  # defined on one path only: not visible after the if
            if values[0] is values[1]:
                continue
            if not all(isinstance(v, Value) for v in values):
                if values[0] is values[1]:
                    self.env[-1][name] = values[0]
                    continue
                raise self.error(f"'{name}' is bound to a compile-time value in only one branch", meta)
            merged = unify(values[0].type, values[1].type)
            if merged is None:
                raise self.error(f"Variable '{name}' has type {values[0].type} in the true branch and type "
                                 f"{values[1].type} in the false branch", meta)
            for block, value in zip(node.blocks, values):
                block.add_return(value)
            out = node.add_output(merged)
            if not name.startswith("$"):
                out.name = name
            self.env[-1][name] = out
        return None

    def stmt_while_stmt(self, tree):
        cond_tree, body, else_suite = tree.children
        if else_suite is not None:
            raise self.error("while ... else is not supported", tree.meta)
        cond = self.as_bool(self.expr(cond_tree), tree.meta)

        def body_fn(i):
            self.compile_body(_suite(body))
            return self.as_bool(self.expr(cond_tree), tree.meta)

        self.emit_loop(self.const(INT64_MAX), cond, _suite(body), body_fn, tree.meta)

    def stmt_for_stmt(self, tree):
        target, iter_tree, body, else_suite = tree.children
        if else_suite is not None:
            raise self.error("for ... else is not supported", tree.meta)
        stmts = _suite(body)
        iterable = self.for_iterable(iter_tree)
        if isinstance(iterable, SugaredTuple):
            self.unrolled_for(target, iterable.items, stmts, tree.meta)
            return
        trip, element = iterable

        def body_fn(i):
            self.assign_target(target, element(i))
            self.compile_body(stmts)
            return self.const(True)

        self.emit_loop(trip, self.const(True), stmts, body_fn, tree.meta, extra_assigned=_target_names(target))

    def unrolled_for(self, target, items, stmts, meta):
        if any(_contains(s, ("break_stmt", "continue_stmt")) for s in stmts):
            raise self.error("break/continue in a loop over modules or a tuple is not supported", meta)
        for item in items:
            self.assign_target(target, item)
            self.compile_body(stmts)

    def for_iterable(self, tree):
        """(trip count Value, element(i) -> value) for a runtime loop, or a SugaredTuple to unroll."""
        if getattr(tree, "data", None) == "funccall":
            callee = self.expr(tree.children[0])
            if isinstance(callee, Builtin) and callee.name in ("range", "enumerate", "zip"):
                args = [self.expr(a) for a in _call_args(tree)[0]]
                return getattr(self, f"iter_{callee.name}")(args, tree.meta)
        value = self.expr(tree)
        return self.iterate(value, tree.meta)

    def iterate(self, value, meta):
        if isinstance(value, SugaredModule):
            children = list(value.module._modules.items())
            return SugaredTuple([self.submodule(value, name) for name, _ in children])
        if isinstance(value, SugaredTuple):
            return value
        value = self.as_value(value, meta)
        t = value.type
        if isinstance(t, ListType):
            trip = self.emit("len.list", [value], [Int]).output
            return trip, lambda i: self.emit("getitem.list", [value, i], [t.elem]).output
        if isinstance(t, TupleType):
            return SugaredTuple(self.emit("prim::TupleUnpack", [value], list(t.elems)).outputs)
        if isinstance(t, TensorType):
            zero = self.const(0)
            trip = self.emit("size", [value, zero], [Int]).output
            return trip, lambda i: self.emit("select", [value, zero, i], [TensorType()]).output
        raise self.error(f"cannot iterate over a value of type {t}", meta)

    def iter_range(self, args, meta):
        args = [self.as_value(a, meta) for a in args]
        for a in args:
            if a.type not in (Int, Bool):
                raise self.error(f"range() arguments must be int, got {a.type}", meta)
        if len(args) == 1:
            start, stop, step = self.const(0), args[0], self.const(1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], self.const(1)
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise self.error("range() takes 1 to 3 arguments", meta)
        # trip = max(0, ceil((stop - start) / step)) computed in ints: (stop - start + step - sign) // step
        span = self.emit("sub.scalar", [stop, start], [Int]).output
        if len(args) == 3:
            neg = self.emit("lt.scalar", [step, self.const(0)], [Bool]).output
            sign = self.emit_select_int(neg, -1, 1)
            adjusted = self.emit("sub.scalar", [self.emit("add.scalar", [span, step], [Int]).output, sign], [Int]).output
        else:
            adjusted = self.emit("sub.scalar", [self.emit("add.scalar", [span, step], [Int]).output,
                                                self.const(1)], [Int]).output
        trip = self.emit("floordiv.scalar", [adjusted, step], [Int]).output
        trip = self.emit("max.scalar", [trip, self.const(0)], [Int]).output
        if len(args) == 1:
            return trip, lambda i: i
        return trip, lambda i: self.emit("add.scalar", [start, self.emit("mul.scalar", [i, step], [Int]).output],
                                         [Int]).output

    def emit_select_int(self, cond, a, b):
        node = self.emit("prim::If", [cond], [Int])
        for block, v in zip((node.add_block(), node.add_block()), (a, b)):
            outer = self.block
            self.block = block
            block.add_return(self.const(v))
            self.block = outer
        return node.output

    def iter_enumerate(self, args, meta):
        if len(args) != 1:
            raise self.error("enumerate() takes one iterable here", meta)
        inner = self.iterate(args[0], meta)
        if isinstance(inner, SugaredTuple):
            return SugaredTuple([SugaredTuple([self.const(i), item]) for i, item in enumerate(inner.items)])
        trip, element = inner
        return trip, lambda i: SugaredTuple([i, element(i)])

    def iter_zip(self, args, meta):
        inners = [self.iterate(a, meta) for a in args]
        if all(isinstance(x, SugaredTuple) for x in inners):
            return SugaredTuple([SugaredTuple(list(items)) for items in zip(*[x.items for x in inners])])
        if any(isinstance(x, SugaredTuple) for x in inners):
            raise self.error("zip() of a list with modules or a tuple is not supported", meta)
        trip = inners[0][0]
        for other, _ in inners[1:]:
            trip = self.emit("min.scalar", [trip, other], [Int]).output
        return trip, lambda i: SugaredTuple([element(i) for _, element in inners])

    def emit_loop(self, trip: Value, cond: Value, stmts, body_fn, meta, extra_assigned=()):
        """prim::Loop carrying every outer variable the body assigns (and the break/continue flags)."""
        assigned = _assigned_names(stmts) | set(extra_assigned)
        break_flag, continue_flag = self.fresh("break"), self.fresh("continue")
        uses_break = any(_contains(s, ("break_stmt",)) for s in stmts)
        uses_continue = any(_contains(s, ("continue_stmt",)) for s in stmts)
        if uses_break:
            self.assign(break_flag, self.const(False))
        carried_names = [n for n in sorted(assigned) if isinstance(self.lookup(n), Value)]
        if self.return_flag is not None and _contains_list(stmts, ("return_stmt",)):
            carried_names += [self.return_flag, "$retval"]
        if uses_break:
            carried_names.append(break_flag)
        node = Node("prim::Loop", [trip, cond] + [self.lookup(n) for n in carried_names], [],
                    None, self.source.location(meta))
        self.block.append(node)
        body = node.add_block()
        i = body.add_param(Int, None)
        outer_block = self.block
        self.block = body
        scope = {}
        for n in carried_names:
            p = body.add_param(self.lookup(n).type, None if n.startswith("$") else n)
            scope[n] = p
        self.env.append(scope)
        flags = (break_flag,) if uses_break else ()
        if uses_continue:
            self.assign(continue_flag, self.const(False))
            flags = flags + (continue_flag,)
        self.loop_flags.append(flags)
        next_cond = body_fn(i)
        self.loop_flags.pop()
        if uses_break:
            next_cond = self.emit("and.scalar", [next_cond, self.emit("not.scalar", [self.lookup(break_flag)],
                                                                       [Bool]).output], [Bool]).output
        if self.return_flag is not None and self.return_flag in carried_names:
            next_cond = self.emit("and.scalar", [next_cond, self.emit("not.scalar", [self.lookup(self.return_flag)],
                                                                       [Bool]).output], [Bool]).output
        body.add_return(next_cond)
        inner_scope = self.env.pop()
        for n in carried_names:
            value = inner_scope.get(n, scope[n])
            if not isinstance(value, Value):
                raise self.error(f"loop variable '{n}' must stay a runtime value", meta)
            if unify(value.type, scope[n].type) is None:
                raise self.error(f"Variable '{n}' has type {scope[n].type} before the loop but {value.type} "
                                 "inside it", meta)
            body.add_return(value)
        self.block = outer_block
        for n in carried_names:
            out = node.add_output(scope[n].type)
            if not n.startswith("$"):
                out.name = n
            self.env[-1][n] = out

    def stmt_break_stmt(self, tree):
        if not self.loop_flags or not self.loop_flags[-1]:
            raise self.error("'break' outside loop", tree.meta)
        self.assign(self.loop_flags[-1][0], self.const(True))

    def stmt_continue_stmt(self, tree):
        flags = self.loop_flags[-1] if self.loop_flags else ()
        name = next((f for f in flags if f.startswith("$continue")), None)
        if name is None:
            raise self.error("'continue' not properly in loop", tree.meta)
        self.assign(name, self.const(True))

    def stmt_funcdef(self, tree):
        raise self.error("nested function definitions are not supported", tree.meta)

    # --- expressions ------------------------------------------------------------------------------------
    def expr(self, tree, expected: Type | None = None):
        if not hasattr(tree, "data"):
            raise self.error(f"unexpected token {tree!r}")
        self.meta = tree.meta if not getattr(tree.meta, "empty", True) else self.meta
        handler = getattr(self, f"expr_{tree.data}", None)
        if handler is None:
            raise self.error(_UNSUPPORTED_EXPRESSIONS.get(tree.data, f"'{tree.data}' expressions are not supported"),
                             tree.meta)
        if tree.data in ("list", "dict"):
            return handler(tree, expected)
        return handler(tree)

    def as_value(self, value, meta=None) -> Value:
        if isinstance(value, Value):
            return value
        if isinstance(value, DTypeConst):
            return self.const(value.value)
        if isinstance(value, SugaredTuple):
            items = [self.as_value(v, meta) for v in value.items]
            return self.emit("prim::TupleConstruct", items, [TupleType(tuple(v.type for v in items))]).output
        if isinstance(value, SugaredModule):
            return value.value
        raise self.error(f"this {type(value).__name__.lower()} cannot be used as a value", meta)

    def expr_number(self, tree):
        text = str(tree.children[0]).replace("_", "")
        if text.lower().endswith("j"):
            raise self.error("complex numbers are not supported", tree.meta)
        if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
            return self.const(float(text))
        return self.const(int(text, 0))

    def expr_string(self, tree):
        return self.const(_string_value(tree))

    def expr_string_concat(self, tree):
        return self.const(_string_value(tree))

    def expr_const_none(self, tree):
        return self.const(None)

    def expr_const_true(self, tree):
        return self.const(True)

    def expr_const_false(self, tree):
        return self.const(False)

    def expr_ellipsis(self, tree):
        return Ellipsis

    def expr_var(self, tree):
        name = str(tree.children[0].children[0])
        value = self.lookup(name)
        if isinstance(value, _LazyRefine):
            refined = self.emit("prim::Refine", [value.value], [value.value.type.elem]).output
            self.env[-1][name] = refined
            return refined
        if value is not None:
            return value
        if name == "self" and self.self_value is not None:
            return self.self_value
        return self.resolve_global(name, tree.meta)

    def resolve_global(self, name: str, meta):
        if name in self.globals:
            obj = self.globals[name]
        elif hasattr(builtins, name):
            obj = getattr(builtins, name)
        else:
            raise self.error(f"undefined value {name}", meta)
        return self.sugar(obj, name, meta)

    def sugar(self, obj, name, meta):
        import scriptc
        from scriptc.nn import functional

        if obj is scriptc:
            return Namespace("torch")
        if obj is functional:
            return Namespace("F")
        if obj is math:
            return Namespace("math")
        if obj is typing:
            return Namespace("typing")
        if isinstance(obj, dtype):
            return DTypeConst(obj)
        if obj in (len, range, int, float, bool, min, max, abs, isinstance, enumerate, zip, list, tuple, print,
                   str):
            return Builtin(obj.__name__)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return Builtin(obj.__name__)
        if isinstance(obj, (bool, int, float, str)) or obj is None:
            return self.const(obj)
        if inspect.isfunction(obj) and obj.__module__.startswith("scriptc.nn.functional") and ops.overloads(obj.__name__):
            return _Callee("F", obj.__name__)  # a functional wrapper of an op: call the op
        if inspect.isfunction(obj):
            return PyFunction(obj)
        if isinstance(obj, type(scriptc)):
            if obj.__name__ == "scriptc.nn":
                return Namespace("nn")
        if getattr(obj, "__module__", "").startswith("scriptc") and callable(obj):
            fname = getattr(obj, "__name__", name)
            if ops.overloads(fname):
                return _Callee("torch", fname)
        raise self.error(f"'{name}' ({type(obj).__name__}) cannot be used in a scripted function", meta)

    def expr_getattr(self, tree):
        base = self.expr(tree.children[0])
        name = str(tree.children[1].children[0])
        return self.attribute(base, name, tree.meta)

    def attribute(self, base, name, meta):
        import scriptc
        from scriptc.nn import functional

        if isinstance(base, Namespace):
            if base.kind == "torch":
                if name in ("nn", "jit", "autograd", "optim"):
                    return Namespace("nn" if name == "nn" else name)
                obj = getattr(scriptc, name, None)
                if isinstance(obj, dtype):
                    return DTypeConst(obj)
                return _Callee("torch", name)
            if base.kind == "nn":
                if name == "functional":
                    return Namespace("F")
                raise self.error(f"torch.nn.{name} cannot be used inside a scripted function", meta)
            if base.kind == "F":
                if not hasattr(functional, name):
                    raise self.error(f"torch.nn.functional has no function '{name}'", meta)
                if not ops.overloads(name) and name not in ("relu_",) and inspect.isfunction(getattr(functional, name)):
                    return PyFunction(getattr(functional, name))
                return _Callee("F", name)
            if base.kind == "math":
                if name in ("pi", "e", "inf", "nan", "tau"):
                    return self.const(getattr(math, name))
                return _Callee("math", name)
            if base.kind == "typing":
                return Builtin(name)
            raise self.error(f"{base.kind}.{name} is not supported", meta)
        if isinstance(base, SugaredModule):
            return self.module_attribute(base, name, meta)
        if isinstance(base, Value):
            t = base.type
            if isinstance(t, TensorType):
                if name == "shape":
                    return self.emit("size.all", [base], [ListType(Int)]).output
                if name == "T":
                    return self.call_tensor_method(base, "t", [], {}, meta)
                if name == "dtype":
                    return self.emit("dtype", [base], [DType]).output
                if name == "device":
                    raise self.error("Tensor.device is not supported in scripted code", meta)
                return _BoundMethod(base, name)
            return _BoundMethod(base, name)
        raise self.error(f"'{type(base).__name__}' has no attribute '{name}' in a scripted function", meta)

    def submodule(self, owner: SugaredModule, name: str):
        child = owner.module._modules[name]
        if child is None:
            return self.const(None)
        path = f"{owner.path}.{name}" if owner.path else name
        value = self.emit("prim::GetAttr", [owner.value], [ModuleType(path)], {"name": name}).output
        return SugaredModule(child, value, path)

    def module_attribute(self, owner: SugaredModule, name: str, meta):
        module = owner.module
        if name in module._parameters or name in module._buffers:
            t = module._parameters.get(name) if name in module._parameters else module._buffers.get(name)
            if t is None:
                return self.const(None)
            return self.emit("prim::GetAttr", [owner.value], [TensorType(t.dtype, tuple(t.shape))],
                             {"name": name}).output
        if name in module._modules:
            return self.submodule(owner, name)
        if name == "training":
            return self.emit("prim::GetAttr", [owner.value], [Bool], {"name": "training"}).output
        cls_attr = getattr(type(module), name, None)
        if inspect.isfunction(cls_attr):
            if getattr(cls_attr, "_scriptc_ignore", False):
                return _IgnoredMethod(module, name)
            return SugaredMethod(owner, getattr(type(module), name))
        if name in module.__dict__:
            value = module.__dict__[name]
            return self.constant_attribute(value, f"{type(module).__name__}.{name}", meta)
        if isinstance(cls_attr, (bool, int, float, str)) or (cls_attr is None and hasattr(type(module), name)):
            return self.const(cls_attr)
        raise self.error(f"Module '{type(module).__name__}' has no attribute '{name}'", meta)

    def constant_attribute(self, value, where: str, meta):
        if isinstance(value, (bool, int, float, str)) or value is None:
            return self.const(value)
        if isinstance(value, dtype):
            return DTypeConst(value)
        if isinstance(value, (tuple, list)) and all(isinstance(v, (bool, int, float, str)) for v in value):
            return self.const(list(value)) if isinstance(value, list) else SugaredTuple(
                [self.const(v) for v in value])
        raise self.error(f"attribute {where} of type {type(value).__name__} cannot be used in a scripted module "
                         "(only tensors, submodules and int/float/bool/str/tuple constants)", meta)

    def expr_funccall(self, tree):
        try:
            positional, keywords = _call_args(tree)
        except ScriptError as exc:
            raise self.error(exc.message, tree.meta) from None
        callee = self.expr(tree.children[0])
        if isinstance(callee, Builtin) and callee.name == "isinstance":
            return self.builtin_isinstance(positional, tree.meta)
        args = [self.expr(a) for a in positional]
        kwargs = {k: self.expr(v) for k, v in keywords.items()}
        return self.call(callee, args, kwargs, tree.meta)

    def call(self, callee, args, kwargs, meta):
        if isinstance(callee, _Callee):
            if callee.namespace == "math":
                return self.call_math(callee.name, args, meta)
            if callee.namespace == "F":
                return self.call_functional(callee.name, args, kwargs, meta)
            return self.call_op_by_name(callee.name, args, kwargs, meta)
        if isinstance(callee, _BoundMethod):
            base = callee.base
            if isinstance(base.type, TensorType):
                return self.call_tensor_method(base, callee.name, args, kwargs, meta)
            if isinstance(base.type, ListType) and callee.name == "append":
                if len(args) != 1:
                    raise self.error("list.append() takes exactly one argument", meta)
                value = self.as_value(args[0], meta)
                return self.emit("append.list", [base, value], [base.type]).output
            raise self.error(f"'{base.type}' has no method '{callee.name}' in scripted code", meta)
        if isinstance(callee, Builtin):
            return self.call_builtin(callee.name, args, kwargs, meta)
        if isinstance(callee, SugaredModule):
            forward = getattr(type(callee.module), "forward", None)
            if forward is None:
                raise self.error(f"module {type(callee.module).__name__} has no forward()", meta)
            return self.inline_method(callee, forward, args, kwargs, meta)
        if isinstance(callee, SugaredMethod):
            return self.inline_method(callee.owner, callee.fn, args, kwargs, meta)
        if isinstance(callee, PyFunction):
            if getattr(callee.fn, "_scriptc_ignore", False):
                return self.call_ignored(callee.fn, args, meta)
            return self.call_function(callee.fn, args, kwargs, meta)
        if isinstance(callee, _IgnoredMethod):
            return self.call_ignored(getattr(callee.module, callee.name), args, meta)
        raise self.error("this value is not callable", meta)

    def inline_method(self, owner: SugaredModule, fn, args, kwargs, meta):
        return self.ctx.inline(fn, owner, args, kwargs, self, meta)

    def call_function(self, fn, args, kwargs, meta):
        graph, name = self.ctx.function_graph(fn, meta, self)
        values = self.bind_python_signature(fn, args, kwargs, meta, skip_self=False, graph=graph)
        node = self.emit("prim::Call", values, [o.type for o in graph.outputs], {"function": name})
        return node.outputs[0] if len(node.outputs) == 1 else SugaredTuple(node.outputs)

    def call_ignored(self, fn, args, meta):
        name = self.ctx.register_ignored(fn)
        values = [self.as_value(a, meta) for a in args]
        return self.emit("prim::Call", values, [TensorType()], {"function": name}).output

    def bind_python_signature(self, fn, args, kwargs, meta, skip_self, graph) -> list[Value]:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if skip_self else 0:]
        values = []
        for i, p in enumerate(params):
            if i < len(args):
                v = args[i]
            elif p.name in kwargs:
                v = kwargs[p.name]
            elif p.default is not inspect.Parameter.empty:
                v = self.default_value(p.default, meta)
            else:
                raise self.error(f"{fn.__name__}() missing required argument '{p.name}'", meta)
            values.append(self.as_value(v, meta))
        if len(args) > len(params):
            raise self.error(f"{fn.__name__}() takes {len(params)} arguments but {len(args)} were given", meta)
        for expected, v in zip(graph.inputs, values):
            if not fits(v.type, expected.type):
                raise self.error(f"{fn.__name__}(): argument '{expected.name}' expects {expected.type}, got {v.type}",
                                 meta)
        return values

    def default_value(self, value, meta):
        if isinstance(value, (bool, int, float, str)) or value is None:
            return self.const(value)
        if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, bool)) for v in value):
            return self.const(list(value))
        raise self.error(f"default value {value!r} is not supported", meta)

    # --- ops -------------------------------------------------------------------------------------------
    def op_value(self, value, meta):
        if value is Ellipsis:
            raise self.error("'...' is only valid inside a subscript", meta)
        if isinstance(value, SugaredTuple):
            items = [self.as_value(v, meta) for v in value.items]
            if items and all(v.type in (Int, Bool) for v in items):
                return self.emit("prim::ListConstruct", items, [ListType(Int)]).output
            return self.as_value(value, meta)
        return self.as_value(value, meta)

    def call_op_by_name(self, name, args, kwargs, meta, method=False):
        candidates = [op for op in ops.overloads(name) if (op.method if method else op.function)]
        if name in ("max", "min"):
            candidates = candidates + ops.overloads("maximum" if name == "max" else "minimum")
        if not candidates:
            raise self.error(f"unknown builtin op '{name}'", meta)
        first = candidates[0].schema.args
        if not method and first and isinstance(first[0].type, ListType) and len(args) > 1 and \
                all(isinstance(a, Value) and a.type == Int for a in args):
            args = [SugaredTuple(list(args))]  # torch.zeros(2, 3) means torch.zeros([2, 3])
        args = [self.op_value(a, meta) for a in args]
        kwargs = {k: self.op_value(v, meta) for k, v in kwargs.items()}
        errors = []
        for op in candidates:
            bound = self.bind_op(op, args, kwargs)
            if isinstance(bound, str):
                errors.append(f"  {op.schema}\n    {bound}")
                continue
            return self.emit_op(op, bound, meta)
        raise self.error(f"arguments for call are not valid; '{name}' accepts:\n" + "\n".join(errors), meta)

    def bind_op(self, op, args: list[Value], kwargs: dict[str, Value]):
        """Values in schema order (defaults as constants), or a string saying why they don't fit."""
        params = op.schema.args
        if len(args) > len(params):
            return f"expected at most {len(params)} arguments but got {len(args)}"
        bound = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                bound.append(kwargs[p.name])
            elif p.has_default:
                bound.append(None)
            else:
                return f"argument '{p.name}' not provided"
        extra = set(kwargs) - {p.name for p in params}
        if extra:
            return f"unexpected keyword argument '{sorted(extra)[0]}'"
        for p, v in zip(params, bound):
            if v is not None and not fits(v.type, p.type):
                return f"argument '{p.name}' expects {p.type}, but got {v.type}"
        return [v if v is not None else p.default for p, v in zip(params, bound)]

    def emit_op(self, op, bound, meta) -> Any:
        values = [v if isinstance(v, Value) else self.const(v) for v in bound]
        types = self.output_types(op, values)
        if op.inplace_of is not None:
            types = [values[0].type]
        node = self.emit(op.name, values, types)
        if len(op.schema.returns) > 1:
            return SugaredTuple(node.outputs)
        return node.output

    def output_types(self, op, values: list[Value]) -> list[Type]:
        """Output types from the op's shape rule where it agrees with the schema, else the schema's."""
        declared = list(op.schema.returns)
        try:
            inferred = op.shape(*[self.static_meta(v) for v in values])
        except Exception:
            inferred = None
        if not isinstance(inferred, (tuple, list)) or len(declared) == 1:
            inferred = [inferred]
        if len(inferred) != len(declared):
            inferred = [None] * len(declared)
        out = []
        for t, d in zip(inferred, declared):
            if isinstance(d, TensorType):
                out.append(TensorType(t.dtype, None) if isinstance(t, TensorType) else TensorType())
            elif d == Scalar:
                out.append(t if t in (Int, Float, Bool) else Float)
            elif isinstance(t, Type) and fits(t, d):
                out.append(t)
            else:
                out.append(self.declared_type(d, values))
        return out

    def declared_type(self, t: Type, values) -> Type:
        if isinstance(t, TensorType):
            return TensorType()
        if isinstance(t, ListType) and isinstance(t.elem, TensorType):
            return ListType(TensorType())
        if t == Scalar:
            return Float
        return t

    def static_meta(self, v: Value):
        if v.node is not None and v.node.op == "prim::Constant":
            return v.node.attrs["value"]
        if isinstance(v.type, TensorType):
            return v.type
        if v.node is not None and v.node.op == "prim::ListConstruct":
            return [self.static_meta(x) for x in v.node.inputs]
        return Unknown(v.type)

    def call_tensor_method(self, base: Value, name, args, kwargs, meta):
        if name == "size":
            if not args and not kwargs:
                return self.emit("size.all", [base], [ListType(Int)]).output
            dim = self.as_value(args[0] if args else kwargs["dim"], meta)
            return self.emit("size", [base, dim], [Int]).output
        if name in ("dim", "ndimension"):
            return self.emit("dim", [base], [Int]).output
        if name in ("numel", "nelement"):
            return self.emit("numel", [base], [Int]).output
        if name == "item":
            return self.emit("float.tensor", [base], [Float]).output
        conversions = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                       "bool": "bool"}
        if name in conversions and not args:
            from scriptc.types import DTYPES_BY_NAME
            return self.emit_op(ops.OPS["to.dtype"], [base, self.const(DTYPES_BY_NAME[conversions[name]])], meta)
        if name == "to":
            target = args[0] if args else kwargs.get("dtype")
            if isinstance(target, DTypeConst):
                return self.emit_op(ops.OPS["to.dtype"], [base, self.const(target.value)], meta)
            raise self.error("Tensor.to() in scripted code takes a dtype", meta)
        if name in ("contiguous", "detach", "cpu") and not args:
            return self.emit_op(ops.OPS["contiguous"], [base], meta) if name == "contiguous" else base
        if name in ("view", "reshape", "permute", "expand", "repeat", "flip") and len(args) != 1:
            args = [SugaredTuple(list(args))]
        if name in ("view", "reshape", "permute", "expand", "repeat", "flip") and len(args) == 1 and \
                isinstance(args[0], Value) and args[0].type in (Int,):
            args = [SugaredTuple(list(args))]
        if name == "type_as":
            raise self.error("Tensor.type_as is not supported in scripted code", meta)
        if name in ("new_zeros", "new_ones"):
            size = SugaredTuple(list(args)) if len(args) != 1 or (isinstance(args[0], Value) and
                                                                   args[0].type == Int) else args[0]
            return self.emit_op(ops.OPS[name], [base, self.op_value(size, meta)], meta)
        return self.call_op_by_name(name, [base] + list(args), kwargs, meta, method=True)

    _F_DROPPED = ("_stacklevel", "size_average", "reduce", "return_indices", "max_norm", "norm_type",
                  "scale_grad_by_freq", "sparse")

    def call_functional(self, name, args, kwargs, meta):
        from scriptc.nn import functional

        fn = getattr(functional, name)
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"F.{name}(): {exc}", meta) from None
        named = dict(bound.arguments)
        inplace = named.pop("inplace", None)
        for dropped in self._F_DROPPED:
            value = named.pop(dropped, None)
            if isinstance(value, Value) and not (value.node is not None and value.node.op == "prim::Constant" and
                                                 value.node.attrs["value"] in (None, False, 3, 2.0)):
                raise self.error(f"F.{name}({dropped}=...) is not supported in scripted code", meta)
        in_place = inplace is not None and self.static_bool(inplace) is True
        op_name = {"relu_": "relu", "scaled_dot_product_attention": None}.get(name, name)
        if op_name is None or not ops.overloads(op_name):
            raise self.error(f"F.{name} is not supported in scripted code", meta)
        op = ops.OPS[op_name]
        if name in ("softmax", "log_softmax") and "dim" not in named:
            raise self.error(f"F.{name}() needs an explicit dim in scripted code", meta)
        if name == "layer_norm" and "normalized_shape" in named:
            shape = named["normalized_shape"]
            if isinstance(shape, Value) and shape.type == Int:
                named["normalized_shape"] = self.emit("prim::ListConstruct", [shape], [ListType(Int)]).output
        if "input" in named and "input" not in op.arg_index:
            named[op.schema.args[0].name] = named.pop("input")  # F.relu(input) is relu(self)
        target = op.inplace if in_place and op.inplace is not None else op
        values = {k: self.op_value(v, meta) for k, v in named.items()}
        bound_values = self.bind_op(target, [], values)
        if isinstance(bound_values, str):
            raise self.error(f"F.{name}(): {bound_values}\n  schema: {target.schema}", meta)
        return self.emit_op(target, bound_values, meta)

    def call_math(self, name, args, meta):
        if not ops.OPS.get(f"math.{name}"):
            raise self.error(f"math.{name} is not supported", meta)
        if len(args) != 1:
            raise self.error(f"math.{name}() takes one argument", meta)
        value = self.as_value(args[0], meta)
        if value.type not in (Int, Float, Bool):
            raise self.error(f"math.{name}() expects a number, got {value.type}", meta)
        op = ops.OPS[f"math.{name}"]
        return self.emit(op.name, [value], [op.shape(Unknown(value.type))]).output

    def call_builtin(self, name, args, kwargs, meta):
        if name == "len":
            if len(args) == 1 and isinstance(args[0], SugaredModule):
                return self.const(len(args[0].module._modules))
            if len(args) == 1 and isinstance(args[0], SugaredTuple):
                return self.const(len(args[0].items))
            value = self.as_value(args[0], meta)
            if isinstance(value.type, TensorType):
                return self.emit("size", [value, self.const(0)], [Int]).output
            if isinstance(value.type, ListType):
                return self.emit("len.list", [value], [Int]).output
            if isinstance(value.type, TupleType):
                return self.const(len(value.type.elems))
            raise self.error(f"len() of a value of type {value.type}", meta)
        if name in ("int", "float", "bool"):
            if len(args) != 1:
                raise self.error(f"{name}() takes one argument", meta)
            value = self.as_value(args[0], meta)
            if value.type == Str and value.node.op == "prim::Constant":
                try:
                    return self.const(getattr(builtins, name)(value.node.attrs["value"]))
                except ValueError:
                    raise self.error(f"{name}() of {value.node.attrs['value']!r}", meta) from None
            if isinstance(value.type, TensorType):
                return self.emit(f"{name}.tensor", [value], [{"int": Int, "float": Float, "bool": Bool}[name]]).output
            return self.emit(f"{name}.scalar", [value], [{"int": Int, "float": Float, "bool": Bool}[name]]).output
        if name in ("min", "max"):
            values = [self.as_value(a, meta) for a in args]
            if len(values) == 1 and isinstance(values[0].type, TensorType):
                return self.call_op_by_name(name, values, kwargs, meta)
            if len(values) < 2:
                raise self.error(f"{name}() of one value is only supported for tensors", meta)
            if any(isinstance(v.type, TensorType) for v in values):
                return self.call_op_by_name("maximum" if name == "max" else "minimum", values, {}, meta)
            result = values[0]
            for v in values[1:]:
                result = self.emit(f"{name}.scalar", [result, v], [unify(result.type, v.type) or Float]).output
            return result
        if name == "abs":
            value = self.as_value(args[0], meta)
            if isinstance(value.type, TensorType):
                return self.call_op_by_name("abs", [value], {}, meta)
            return self.emit("abs.scalar", [value], [value.type]).output
        if name in ("list", "tuple"):
            if len(args) == 1 and isinstance(args[0], SugaredTuple):
                return args[0] if name == "tuple" else self.op_value(args[0], meta)
            if len(args) == 1 and isinstance(args[0], Value) and isinstance(args[0].type, ListType):
                return args[0]
            raise self.error(f"{name}() of this value is not supported", meta)
        if name == "range":
            raise self.error("range() can only be used as the iterable of a for loop", meta)
        if name == "print":
            raise self.error("print() is not supported in scripted code", meta)
        raise self.error(f"builtin '{name}' is not supported here", meta)

    def builtin_isinstance(self, positional, meta):
        if len(positional) != 2:
            raise self.error("isinstance() takes two arguments", meta)
        value = self.expr(positional[0])
        types = self.annotation_types(positional[1])
        if isinstance(value, SugaredTuple):
            actual = TupleType(tuple(self.as_value(v).type for v in value.items))
        elif isinstance(value, Value):
            actual = value.type
        else:
            return self.const(False)
        return self.const(any(_isinstance_type(actual, t) for t in types))

    # --- operators --------------------------------------------------------------------------------------
    _TENSOR_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floor_divide", "%": "remainder",
                      "**": "pow", "@": "matmul", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor"}
    _SCALAR_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod", "**": "pow"}
    _COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
    _FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}

    def binary(self, op: str, left, right, meta):
        left, right = self.as_value(left, meta), self.as_value(right, meta)
        lt, rt = isinstance(left.type, TensorType), isinstance(right.type, TensorType)
        if lt or rt:
            if op not in self._TENSOR_BINARY:
                raise self.error(f"operator {op} is not supported on tensors", meta)
            name = self._TENSOR_BINARY[op]
            if not lt and op in ("+", "*", "&", "|", "^"):
                left, right = right, left
            return self.call_op_by_name(name, [left, right], {}, meta)
        if op not in self._SCALAR_BINARY:
            raise self.error(f"operator {op} is not supported on {left.type} and {right.type}", meta)
        for v in (left, right):
            if v.type not in (Int, Float, Bool):
                raise self.error(f"unsupported operand types for {op}: {left.type} and {right.type}", meta)
        op_def = ops.OPS[f"{self._SCALAR_BINARY[op]}.scalar"]
        out_type = op_def.shape(Unknown(left.type), Unknown(right.type))
        return self.emit(op_def.name, [left, right], [out_type]).output

    def compare(self, op: str, left, right, meta):
        if op in ("is", "is not"):
            return self.identity_test(op, left, right, meta)
        if op in ("in", "not in"):
            if not isinstance(right, SugaredTuple):
                raise self.error(f"the '{op}' operator is only supported with a tuple of values", meta)
            result = self.const(False)
            for item in right.items:
                test = self.compare("==", left, item, meta)
                result = self.logical("or", result, lambda t=test: t, meta)
            return result if op == "in" else self.emit("not.scalar", [self.as_bool(result, meta)], [Bool]).output
        left, right = self.as_value(left, meta), self.as_value(right, meta)
        name = self._COMPARE[op]
        if isinstance(left.type, TensorType) or isinstance(right.type, TensorType):
            if not isinstance(left.type, TensorType):
                left, right, name = right, left, self._FLIPPED[name]
            return self.call_op_by_name(name, [left, right], {}, meta)
        if left.type == NoneType or right.type == NoneType:
            raise self.error("use `is None` / `is not None` to compare with None", meta)
        return self.emit(f"{name}.scalar", [left, right], [Bool]).output

    def identity_test(self, op, left, right, meta):
        left_value, right_value = self.as_value(left, meta), self.as_value(right, meta)
        if right_value.type != NoneType:
            raise self.error("`is` is only supported for comparing with None", meta)
        static = self.static_is_none(left_value)
        if static is not None:
            result = static if op == "is" else not static
            return self.const(result)
        out = self.emit("prim::IsNone", [left_value], [Bool]).output
        return out if op == "is" else self.emit("not.scalar", [out], [Bool]).output

    def static_is_none(self, value: Value):
        if value.type == NoneType:
            return True
        if not isinstance(value.type, OptionalType):
            return False
        return None

    def refinements(self, cond_tree):
        """({name: refined value} for the true branch, {...} for the false branch) of `x is [not] None`."""
        if getattr(cond_tree, "data", None) != "comparison" or len(cond_tree.children) != 3:
            return {}, {}
        left, op_tree, right = cond_tree.children
        op = " ".join(str(t) for t in op_tree.children)
        if op not in ("is", "is not") or getattr(left, "data", None) != "var" or \
                getattr(right, "data", None) != "const_none":
            return {}, {}
        name = str(left.children[0].children[0])
        value = self.lookup(name)
        if not isinstance(value, Value) or not isinstance(value.type, OptionalType):
            return {}, {}
        refined = _LazyRefine(value)
        return ({}, {name: refined}) if op == "is" else ({name: refined}, {})

    def static_bool(self, value):
        if isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant" and \
                isinstance(value.node.attrs["value"], bool):
            return value.node.attrs["value"]
        return None

    def as_bool(self, value, meta) -> Value:
        value = self.as_value(value, meta)
        if value.type == Bool:
            return value
        if isinstance(value.type, TensorType):
            return self.emit("bool.tensor", [value], [Bool]).output
        if value.type in (Int, Float):
            return self.emit("bool.scalar", [value], [Bool]).output
        raise self.error(f"expected a bool condition, got a value of type {value.type}", meta)

    def expr_comparison(self, tree):
        items = tree.children
        left = self.expr(items[0])
        result = None
        for i in range(1, len(items), 2):
            op = " ".join(str(t) for t in items[i].children)
            right = self.expr(items[i + 1])
            test = self.compare(op, left, right, tree.meta)
            result = test if result is None else self.logical("and", result, lambda t=test: t, tree.meta)
            left = right
        return result

    def logical(self, kind, left, right_fn, meta):
        left = self.as_bool(left, meta)
        static = self.static_bool(left)
        if static is not None:
            if (kind == "and" and not static) or (kind == "or" and static):
                return left
            return self.as_bool(right_fn(), meta)
        node = self.emit("prim::If", [left], [Bool])
        outer = self.block
        for index, block in enumerate((node.add_block(), node.add_block())):
            self.block = block
            self.env.append({})
            take_right = (index == 0) == (kind == "and")
            value = self.as_bool(right_fn(), meta) if take_right else left
            self.env.pop()
            block.add_return(value)
        self.block = outer
        return node.output

    def expr_and_test(self, tree):
        result = self.expr(tree.children[0])
        for operand in tree.children[1:]:
            result = self.logical("and", result, lambda o=operand: self.expr(o), tree.meta)
        return result

    def expr_or_test(self, tree):
        result = self.expr(tree.children[0])
        for operand in tree.children[1:]:
            result = self.logical("or", result, lambda o=operand: self.expr(o), tree.meta)
        return result

    def expr_not_test(self, tree):
        value = self.as_bool(self.expr(tree.children[0]), tree.meta)
        static = self.static_bool(value)
        if static is not None:
            return self.const(not static)
        return self.emit("not.scalar", [value], [Bool]).output

    def _chain(self, tree):
        items = tree.children
        result = self.expr(items[0])
        for i in range(1, len(items), 2):
            result = self.binary(str(items[i]), result, self.expr(items[i + 1]), tree.meta)
        return result

    expr_arith_expr = expr_term = expr_shift_expr = _chain

    def expr_or_expr(self, tree):
        return self._fold_bitwise(tree, "|")

    def expr_xor_expr(self, tree):
        return self._fold_bitwise(tree, "^")

    def expr_and_expr(self, tree):
        return self._fold_bitwise(tree, "&")

    def _fold_bitwise(self, tree, op):
        result = self.expr(tree.children[0])
        for operand in tree.children[1:]:
            right = self.expr(operand)
            lv, rv = self.as_value(result), self.as_value(right)
            if lv.type == Bool and rv.type == Bool:
                name = {"|": "or", "&": "and", "^": "ne"}[op]
                result = self.emit(f"{name}.scalar", [lv, rv], [Bool]).output
            else:
                result = self.binary(op, lv, rv, tree.meta)
        return result

    def expr_factor(self, tree):
        op, operand = str(tree.children[0]), self.expr(tree.children[1])
        value = self.as_value(operand, tree.meta)
        if op == "+":
            return value
        if isinstance(value.type, TensorType):
            return self.call_op_by_name("neg" if op == "-" else "bitwise_not", [value], {}, tree.meta)
        if op == "~":
            raise self.error("~ is only supported on tensors", tree.meta)
        if value.node is not None and value.node.op == "prim::Constant" and isinstance(
                value.node.attrs["value"], (int, float)) and not isinstance(value.node.attrs["value"], bool):
            return self.const(-value.node.attrs["value"])
        return self.emit("neg.scalar", [value], [value.type]).output

    def expr_power(self, tree):
        base, exponent = self.expr(tree.children[0]), self.expr(tree.children[1])
        return self.binary("**", base, exponent, tree.meta)

    def expr_test(self, tree):
        then_tree, cond_tree, else_tree = tree.children
        refinements = self.refinements(cond_tree)
        cond = self.expr(cond_tree)
        static = self.static_bool(cond)
        if static is not None:
            return self.expr(then_tree if static else else_tree)
        cond = self.as_bool(cond, tree.meta)
        node = self.emit("prim::If", [cond], [])
        outer = self.block
        values = []
        for block, sub, refined in zip((node.add_block(), node.add_block()), (then_tree, else_tree), refinements):
            self.block = block
            self.env.append(dict(refined))
            values.append(self.as_value(self.expr(sub), tree.meta))
            self.env.pop()
        self.block = outer
        merged = unify(values[0].type, values[1].type)
        if merged is None:
            raise self.error(f"the branches of a conditional expression have types {values[0].type} and "
                             f"{values[1].type}", tree.meta)
        for block, v in zip(node.blocks, values):
            block.add_return(v)
        return node.add_output(merged)

    def expr_tuple(self, tree):
        items = [self.expr(c) for c in tree.children if c is not None]
        return SugaredTuple(items)

    expr_testlist_tuple = expr_tuple

    def expr_list(self, tree, expected=None):
        items = [self.as_value(self.expr(c), tree.meta) for c in tree.children if c is not None]
        if expected is not None and isinstance(expected, ListType):
            elem = expected.elem
        elif items:
            elem = items[0].type
            for v in items[1:]:
                merged = unify(elem, v.type)
                if merged is None:
                    raise self.error(f"list elements have different types: {elem} and {v.type}", tree.meta)
                elem = merged
        else:
            elem = TensorType()
        for v in items:
            if not fits(v.type, elem):
                raise self.error(f"a list of {elem} cannot hold a {v.type}", tree.meta)
        return self.emit("prim::ListConstruct", items, [ListType(elem)]).output

    def expr_dict(self, tree, expected=None):
        keys, values = [], []
        for kv in tree.children:
            if kv is None:
                continue
            if getattr(kv, "data", None) != "key_value":
                raise self.error("dict unpacking (**) is not supported", tree.meta)
            key = kv.children[0]
            if getattr(key, "data", None) not in ("string", "string_concat"):
                raise self.error("dict keys must be string constants", tree.meta)
            keys.append(_string_value(key))
            values.append(self.as_value(self.expr(kv.children[1]), tree.meta))
        elem = values[0].type if values else TensorType()
        for v in values[1:]:
            elem = unify(elem, v.type) or elem
        return self.emit("prim::DictConstruct", values, [DictType(Str, elem)], {"keys": keys}).output

    def expr_list_comprehension(self, tree):
        comp = tree.children[0]
        result_tree, fors, cond_tree = comp.children
        loops = [c for c in fors.children]
        if len(loops) != 1 or cond_tree is not None:
            raise self.error("only `[expr for x in iterable]` comprehensions are supported", tree.meta)
        _, target, iter_tree = loops[0].children
        iterable = self.for_iterable(iter_tree)
        if isinstance(iterable, SugaredTuple):
            items = []
            self.env.append({})
            for item in iterable.items:
                self.assign_target(target, item)
                items.append(self.as_value(self.expr(result_tree), tree.meta))
            self.env.pop()
            elem = items[0].type if items else TensorType()
            return self.emit("prim::ListConstruct", items, [ListType(elem)]).output
        trip, element = iterable
        # The element type comes from compiling the expression once in a throwaway block.
        probe = Block()
        outer = self.block
        self.block = probe
        self.env.append({})
        self.assign_target(target, element(self.const(0)))
        elem_type = self.as_value(self.expr(result_tree), tree.meta).type
        self.env.pop()
        probe.clear()
        self.block = outer
        result = self.emit("prim::ListConstruct", [], [ListType(elem_type)]).output
        node = Node("prim::Loop", [trip, self.const(True)], [], None, self.source.location(tree.meta))
        self.block.append(node)
        body = node.add_block()
        i = body.add_param(Int)
        self.block = body
        self.env.append({})
        self.assign_target(target, element(i))
        item = self.as_value(self.expr(result_tree), tree.meta)
        self.emit("append.list", [result, item], [result.type])
        self.env.pop()
        body.add_return(self.const(True))
        self.block = outer
        return result

    def expr_getitem(self, tree):
        base = self.expr(tree.children[0])
        index_tree = tree.children[1]
        if isinstance(base, SugaredTuple):
            index = self.expr(index_tree)
            static = _constant_int(index)
            if static is None:
                raise self.error("tuple indices must be integer constants", tree.meta)
            return base.items[static]
        if isinstance(base, SugaredModule):
            index = _constant_int(self.expr(index_tree))
            items = list(base.module._modules)
            if index is None or not -len(items) <= index < len(items):
                raise self.error("ModuleList/Sequential indices must be integer constants in range", tree.meta)
            return self.submodule(base, items[index])
        base = self.as_value(base, tree.meta)
        t = base.type
        if isinstance(t, TensorType):
            return self.tensor_getitem(base, index_tree, tree.meta)
        index = self.as_value(self.expr(index_tree), tree.meta)
        if isinstance(t, ListType):
            return self.emit("getitem.list", [base, index], [t.elem]).output
        if isinstance(t, TupleType):
            static = _constant_int(index)
            if static is None:
                raise self.error("tuple indices must be integer constants", tree.meta)
            return self.emit("prim::TupleIndex", [base], [t.elems[static]], {"index": static}).output
        raise self.error(f"a value of type {t} cannot be indexed", tree.meta)

    def index_items(self, index_tree) -> list:
        if getattr(index_tree, "data", None) == "subscript_tuple":
            return [c for c in index_tree.children if c is not None]
        return [index_tree]

    def tensor_getitem(self, base: Value, index_tree, meta) -> Value:
        out, advanced = self.basic_index(base, index_tree, meta)
        if advanced:
            lst = self.emit("prim::ListConstruct", advanced, [ListType(OptionalType(TensorType()))]).output
            return self.emit_op(ops.OPS["index"], [out, lst], meta)
        return out

    def basic_index(self, base: Value, index_tree, meta):
        items = self.index_items(index_tree)
        compiled = [c if getattr(c, "data", None) == "slice" else self.expr(c) for c in items]
        ellipses = sum(1 for c in compiled if c is Ellipsis)
        if ellipses > 1:
            raise self.error("an index can only have a single ellipsis ('...')", meta)
        out = base
        dim: Any = 0
        advanced: list[Value] = []
        consumed_after = sum(1 for c in compiled[[i for i, c in enumerate(compiled) if c is Ellipsis][0] + 1:]
                             if not (isinstance(c, Value) and c.type == NoneType)) if ellipses else 0
        for c in compiled:
            if c is Ellipsis:
                rank = self.emit("dim", [out], [Int]).output
                dim = self.emit("sub.scalar", [rank, self.const(consumed_after)], [Int]).output
                continue
            dim_value = dim if isinstance(dim, Value) else self.const(dim)
            if getattr(c, "data", None) == "slice":
                start, stop, step = self.slice_parts(c)
                if start is None and stop is None and step is None:
                    advanced.append(self.const(None))
                else:
                    start_v = self.const(None) if start is None else start
                    stop_v = self.const(None) if stop is None else stop
                    step_v = self.const(1) if step is None else step
                    out = self.emit_op(ops.OPS["slice"], [out, dim_value, start_v, stop_v, step_v], meta)
                    advanced.append(self.const(None))
                dim = self._next_dim(dim)
            elif isinstance(c, Value) and c.type == NoneType:
                out = self.emit_op(ops.OPS["unsqueeze"], [out, dim_value], meta)
                advanced.append(self.const(None))
                dim = self._next_dim(dim)
            elif isinstance(c, Value) and c.type in (Int, Bool):
                out = self.emit_op(ops.OPS["select"], [out, dim_value, c], meta)
            elif isinstance(c, Value) and isinstance(c.type, TensorType):
                advanced.append(c)
                dim = self._next_dim(dim)
            else:
                raise self.error("unsupported index", meta)
        while advanced and advanced[-1].type == NoneType:
            advanced.pop()
        if not any(isinstance(a.type, TensorType) for a in advanced):
            advanced = []
        return out, advanced

    def _next_dim(self, dim):
        if isinstance(dim, Value):
            return self.emit("add.scalar", [dim, self.const(1)], [Int]).output
        return dim + 1

    def slice_parts(self, tree):
        start, stop, op = tree.children
        step = op.children[0] if op is not None else None
        return tuple(None if p is None else self.as_value(self.expr(p)) for p in (start, stop, step))

    def tensor_setitem(self, base: Value, index_tree, value, meta) -> None:
        view, advanced = self.basic_index(base, index_tree, meta)
        value = self.as_value(value, meta)
        if advanced:
            lst = self.emit("prim::ListConstruct", advanced, [ListType(OptionalType(TensorType()))]).output
            if not isinstance(value.type, TensorType):
                raise self.error("assigning through a tensor index needs a tensor value", meta)
            self.emit_op(ops.OPS["index_put_"], [view, lst, value, self.const(False)], meta)
            return
        self.emit_op(ops.OPS["copy_"], [view, value], meta)

    # --- annotations --------------------------------------------------------------------------------------
    def annotation_type(self, tree) -> Type:
        types = self.annotation_types(tree)
        if len(types) != 1:
            raise self.error("a union of types is only allowed with None (Optional)", tree.meta)
        return types[0]

    def annotation_types(self, tree) -> list[Type]:
        kind = getattr(tree, "data", None)
        if kind == "or_expr":
            parts = [self.annotation_types(c) for c in tree.children]
            flat = [t for p in parts for t in p]
            if NoneType in flat and len(flat) == 2:
                return [OptionalType(next(t for t in flat if t != NoneType))]
            return flat
        if kind == "tuple":
            return [t for c in tree.children if c is not None for t in self.annotation_types(c)]
        if kind == "const_none":
            return [NoneType]
        if kind in ("string", "string_concat"):
            return self.annotation_types(_parse_annotation_string(self, tree))
        if kind == "var":
            name = str(tree.children[0].children[0])
            if name in _SIMPLE_TYPES:
                return [_SIMPLE_TYPES[name]]
            if name == "Module":
                return [ModuleType()]
            raise self.error(f"unknown type annotation '{name}'", tree.meta)
        if kind == "getattr":
            name = str(tree.children[1].children[0])
            if name in _SIMPLE_TYPES:
                return [_SIMPLE_TYPES[name]]
            raise self.error(f"unknown type annotation '{_dotted(tree)}'", tree.meta)
        if kind == "getitem":
            head = _dotted(tree.children[0]) or ""
            head = head.split(".")[-1]
            index = tree.children[1]
            args = [self.annotation_type(c) for c in self.index_items(index)]
            if head in ("List", "list"):
                return [ListType(args[0])]
            if head in ("Tuple", "tuple"):
                return [TupleType(tuple(args))]
            if head == "Optional":
                return [OptionalType(args[0])]
            if head in ("Dict", "dict"):
                if args[0] != Str:
                    raise self.error("only Dict[str, T] is supported", tree.meta)
                return [DictType(Str, args[1])]
            if head == "Final":
                return [args[0]]
            if head == "Union":
                if len(args) == 2 and NoneType in args:
                    return [OptionalType(next(t for t in args if t != NoneType))]
                raise self.error("Union is only supported as Optional", tree.meta)
            raise self.error(f"unknown generic type '{head}'", tree.meta)
        raise self.error("unsupported type annotation", getattr(tree, "meta", None))


class _LazyRefine:
    """A refined `Optional[T]` variable: its prim::Refine node is emitted where it is first read."""

    def __init__(self, value: Value):
        self.value = value


RAISED = object()  # what compiling a statement list returns when it ends in `raise`


class _IfView:
    """An if/elif chain seen as one if_stmt, for _ends_with_return."""

    data = "if_stmt"

    def __init__(self, branches, else_suite):
        self.children = [branches[0][0], branches[0][1], _Elifs(branches[1:]), else_suite]


class _Elifs:
    def __init__(self, branches):
        self.children = [_Elif(c, s) for c, s in branches]


class _Elif:
    def __init__(self, cond, suite):
        self.children = [cond, suite]


def _is_refinement_of(value, outer) -> bool:
    if isinstance(value, _LazyRefine):
        return value.value is outer
    return isinstance(value, Value) and value.node is not None and value.node.op == "prim::Refine" and \
        value.node.inputs[0] is outer

class _Callee:
    def __init__(self, namespace: str, name: str):
        self.namespace, self.name = namespace, name


class _BoundMethod:
    def __init__(self, base: Value, name: str):
        self.base, self.name = base, name


class _IgnoredMethod:
    def __init__(self, module, name: str):
        self.module, self.name = module, name


def _isinstance_type(actual: Type, target: Type) -> bool:
    if isinstance(target, TensorType):
        return isinstance(actual, TensorType)
    if isinstance(target, ListType):
        return isinstance(actual, ListType) and (target.elem == Scalar or actual.elem == target.elem)
    if isinstance(target, TupleType):
        return isinstance(actual, TupleType) and (not target.elems or actual.elems == target.elems)
    return actual == target


def _parse_annotation_string(compiler, tree):
    text = _string_value(tree)
    parsed = _parser().parse(f"x: {text}\n")
    return parsed.children[0].children[0].children[1]


# --- tree helpers ---------------------------------------------------------------------------------------

def _suite(tree) -> list:
    if tree is None:
        return []
    if getattr(tree, "data", None) == "suite":
        return [c for c in tree.children if c is not None]
    return [tree]


def _string_value(tree, allow_template: bool = False) -> str:
    """A string literal's value; f-strings give their template text (only allowed in raise messages)."""
    import ast
    if getattr(tree, "data", None) == "string_concat":
        return "".join(_string_value(c, allow_template) for c in tree.children)
    text = str(tree.children[0])
    prefix = text[:len(text) - len(text.lstrip("rRbBuUfF"))]
    if "f" in prefix.lower():
        if not allow_template:
            raise ScriptError("f-strings are only supported in raise/assert messages")
        text = text[len(prefix):]
        prefix = prefix.lower().replace("f", "")
        return ast.literal_eval(prefix + text)
    return ast.literal_eval(text)


def _dotted(tree) -> str | None:
    kind = getattr(tree, "data", None)
    if kind == "var":
        return str(tree.children[0].children[0])
    if kind == "getattr":
        head = _dotted(tree.children[0])
        return f"{head}.{tree.children[1].children[0]}" if head else None
    return None


def _target_name(tree) -> str:
    return _dotted(tree) or "<target>"


def _call_args(tree):
    args_tree = tree.children[1]
    positional, keywords = [], {}
    if args_tree is None:
        return positional, keywords
    for a in args_tree.children:
        if a is None:
            continue
        kind = getattr(a, "data", None)
        if kind == "argvalue":
            keywords[str(_dotted(a.children[0]))] = a.children[1]
        elif kind in ("starargs", "kwargs", "stararg"):
            raise ScriptError("*args and **kwargs in calls are not supported")
        elif kind == "comprehension":
            raise ScriptError("generator expressions are not supported")
        else:
            positional.append(a)
    return positional, keywords


def _contains(tree, kinds) -> bool:
    if getattr(tree, "data", None) in kinds:
        return True
    if getattr(tree, "data", None) in ("funcdef", "classdef"):
        return False
    if getattr(tree, "data", None) in ("for_stmt", "while_stmt") and set(kinds) <= {"break_stmt", "continue_stmt"}:
        return False
    return any(_contains(c, kinds) for c in getattr(tree, "children", []) if c is not None and hasattr(c, "data"))


def _contains_list(stmts, kinds) -> bool:
    return any(_contains(s, kinds) for s in stmts)


def _may_exit(stmt) -> bool:
    """Whether running stmt may skip the statements after it: a return anywhere in it, or a
    break/continue that belongs to an enclosing loop (not to a loop inside stmt)."""
    if _contains(stmt, ("return_stmt",)):
        return True
    return _escapes_loop(stmt)


def _escapes_loop(tree) -> bool:
    kind = getattr(tree, "data", None)
    if kind in ("break_stmt", "continue_stmt"):
        return True
    if kind in ("for_stmt", "while_stmt", "funcdef", "classdef"):
        return False
    return any(_escapes_loop(c) for c in getattr(tree, "children", []) if c is not None and hasattr(c, "data"))


def _is_guard_clause(stmt) -> bool:
    """`if cond: ... return` with no elif/else: the statements after it run only when cond is False."""
    if getattr(stmt, "data", None) != "if_stmt":
        return False
    _, then_suite, elifs, else_suite = stmt.children
    return else_suite is None and not elifs.children and _ends_with_return(_suite(then_suite))


def _ends_with_return(stmts) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if last.data == "return_stmt":
        return True
    if last.data == "if_stmt":
        _, then_suite, elifs, else_suite = last.children
        if else_suite is None:
            return False
        branches = [then_suite] + [e.children[1] for e in elifs.children] + [else_suite]
        return all(_ends_with_return(_suite(b)) for b in branches)
    if last.data == "raise_stmt":
        return True
    return False


def _has_non_tail_return(stmts) -> bool:
    """Whether some return is not in tail position (then return flags are needed)."""
    for i, stmt in enumerate(stmts):
        last = i == len(stmts) - 1
        if stmt.data == "return_stmt":
            if not last:
                return True
            continue
        if stmt.data == "if_stmt":
            _, then_suite, elifs, else_suite = stmt.children
            branches = [then_suite] + [e.children[1] for e in elifs.children] + ([else_suite] if else_suite else [])
            if not last or else_suite is None:
                if any(_contains(b, ("return_stmt",)) for b in branches):
                    return True
                continue
            for b in branches:
                body = _suite(b)
                if _has_non_tail_return(body) or (_contains_list(body, ("return_stmt",)) and
                                                  not _ends_with_return(body)):
                    return True
            continue
        if _contains(stmt, ("return_stmt",)):
            return True
    return False


def _assigned_names(stmts) -> set[str]:
    names: set[str] = set()

    def visit(tree):
        kind = getattr(tree, "data", None)
        if kind in ("funcdef", "classdef"):
            return
        if kind == "assign":
            for t in tree.children[:-1]:
                names.update(_target_names(t))
        elif kind in ("annassign", "augassign"):
            names.update(_target_names(tree.children[0]))
        elif kind == "for_stmt":
            names.update(_target_names(tree.children[0]))
        for c in getattr(tree, "children", []):
            if c is not None and hasattr(c, "data"):
                visit(c)

    for s in stmts:
        visit(s)
    return names


def _target_names(tree) -> set[str]:
    kind = getattr(tree, "data", None)
    if kind == "var":
        return {str(tree.children[0].children[0])}
    if kind in ("tuple", "list", "testlist_tuple", "exprlist"):
        out = set()
        for c in tree.children:
            if c is not None:
                out |= _target_names(c)
        return out
    return set()


def _constant_int(value):
    if isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant" and \
            isinstance(value.node.attrs["value"], int) and not isinstance(value.node.attrs["value"], bool):
        return value.node.attrs["value"]
    return None


_UNSUPPORTED_STATEMENTS = {
    "with_stmt": "with statements are not supported",
    "try_stmt": "try/except is not supported", "try_finally": "try/finally is not supported",
    "global_stmt": "global declarations are not supported", "nonlocal_stmt": "nonlocal declarations are not supported",
    "yield_stmt": "yield is not supported (generators cannot be scripted)",
    "classdef": "class definitions inside a scripted function are not supported",
    "async_stmt": "async statements are not supported", "import_name": "import statements are not supported",
    "import_from": "import statements are not supported", "del_stmt": "del is not supported",
    "import_stmt": "import statements are not supported",
    "decorated": "nested function definitions are not supported",
}
_UNSUPPORTED_EXPRESSIONS = {
    "lambdef": "lambda expressions are not supported", "lambdef_nocond": "lambda expressions are not supported",
    "yield_expr": "yield is not supported (generators cannot be scripted)",
    "yield_from": "yield from is not supported",
    "assign_expr": "assignment expressions (the walrus operator :=) are not supported",
    "set": "set literals are not supported", "set_comprehension": "set comprehensions are not supported",
    "tuple_comprehension": "generator expressions are not supported",
    "dict_comprehension": "dict comprehensions are not supported",
    "star_expr": "starred expressions are not supported", "await_expr": "await is not supported",
}


# --- contexts: functions, modules, helpers ------------------------------------------------------------

class ScriptContext:
    """Per-script state: helper function graphs (prim::Call targets) and ignored Python functions."""

    def __init__(self):
        self.functions: dict[str, Graph] = {}
        self.function_names: dict[int, str] = {}
        self.ignored: dict[str, Any] = {}
        self.compiling: set[int] = set()
        self.depth = 0

    def register_ignored(self, fn) -> str:
        name = f"ignored:{fn.__qualname__}"
        self.ignored[name] = fn
        return name

    def function_graph(self, fn, meta, caller: Compiler):
        key = id(fn)
        if key in self.function_names:
            return self.functions[self.function_names[key]], self.function_names[key]
        if key in self.compiling:
            raise caller.error(f"recursive call to {fn.__name__}() is not supported", meta)
        self.compiling.add(key)
        try:
            graph = compile_function_graph(fn, self)
        finally:
            self.compiling.discard(key)
        name = fn.__qualname__.replace("<locals>.", "")
        while name in self.functions:
            name += "_"
        self.functions[name] = graph
        self.function_names[key] = name
        return graph, name

    def inline(self, fn, owner: SugaredModule, args, kwargs, caller: Compiler, meta):
        if self.depth > 64:
            raise caller.error("methods call each other too deeply (recursion is not supported)", meta)
        source = get_source(fn)
        tree = parse_function(fn, source)
        compiler = Compiler(self, source, fn, owner)
        compiler.block = caller.block
        params = _signature_params(compiler, tree)[1:]
        bound = {}
        for i, (name, declared, default) in enumerate(params):
            if i < len(args):
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            elif default is not _NO_DEFAULT:
                value = compiler.expr(default)
            else:
                raise caller.error(f"{type(owner.module).__name__}.{fn.__name__}() missing required argument "
                                   f"'{name}'", meta)
            if isinstance(value, Value) and declared is not None and not fits(value.type, declared) and \
                    not (isinstance(declared, OptionalType) and value.type == NoneType):
                raise caller.error(f"{type(owner.module).__name__}.{fn.__name__}(): argument '{name}' expects "
                                   f"{declared}, got {value.type}", meta)
            if isinstance(value, Value) and declared is not None and value.type != declared and \
                    isinstance(declared, OptionalType) and value.type != NoneType:
                value = compiler.emit("prim::Refine", [value], [declared]).output
            bound[name] = value
        extra = set(kwargs) - {p[0] for p in params}
        if extra:
            raise caller.error(f"{fn.__name__}() got an unexpected keyword argument '{sorted(extra)[0]}'", meta)
        if len(args) > len(params):
            raise caller.error(f"{fn.__name__}() takes {len(params)} arguments but {len(args)} were given", meta)
        self.depth += 1
        try:
            returns = compiler.compile_function(tree, bound, _return_annotation(compiler, tree))
        finally:
            self.depth -= 1
        caller.block = compiler.block
        result = returns[0]
        if isinstance(result, Value) and isinstance(result.type, TupleType) and result.node is not None and \
                result.node.op == "prim::TupleConstruct":
            return SugaredTuple(list(result.node.inputs))
        return result


_NO_DEFAULT = object()


def _signature_params(compiler: Compiler, tree):
    """[(name, declared type or None, default tree or _NO_DEFAULT)] of a funcdef, rejecting *args/**kwargs."""
    params_tree = tree.children[1]
    out = []
    if params_tree is None:
        return out
    for p in params_tree.children:
        if p is None:
            continue
        kind = p.data
        if kind in ("starparams", "kwparams"):
            raise compiler.error("*args and **kwargs are not supported in scripted functions", p.meta)
        default = _NO_DEFAULT
        if kind == "paramvalue":
            p, default = p.children
            kind = p.data if hasattr(p, "data") else "name"
        if kind == "typedparam":
            name_tree, annotation = p.children
            name = str(name_tree.children[0])
            declared = compiler.annotation_type(annotation) if annotation is not None else None
        elif kind == "name":
            name, declared = str(p.children[0]), None
        else:
            raise compiler.error(f"unsupported parameter {kind}", p.meta)
        out.append((name, declared, default))
    return out


def _return_annotation(compiler: Compiler, tree):
    annotation = tree.children[2]
    return compiler.annotation_type(annotation) if annotation is not None else None


def compile_function_graph(fn, ctx: ScriptContext, owner: SugaredModule | None = None,
                           graph_name: str | None = None, module=None) -> Graph:
    """A Graph for a free function (or a module method, with `self` the first input)."""
    source = get_source(fn)
    tree = parse_function(fn, source)
    graph = Graph(graph_name or fn.__name__)
    compiler = Compiler(ctx, source, fn, None)
    compiler.block = graph.block
    params = _signature_params(compiler, tree)
    args = {}
    if module is not None:
        self_value = graph.add_input(ModuleType(), "self")
        compiler.self_value = SugaredModule(module, self_value, "")
        params = params[1:]
    for name, declared, _ in params:
        t = declared if declared is not None else TensorType()
        v = graph.add_input(t, name)
        args[name] = v
    declared_return = _return_annotation(compiler, tree)
    if _has_non_tail_return(_suite(tree.children[-1])) and declared_return is None:
        declared_return = _discover_return_type(fn, ctx, module)
    returns = compiler.compile_function(tree, args, declared_return)
    result = compiler.as_value(returns[0], tree.meta)
    graph.add_output(result)
    return graph


def _discover_return_type(fn, ctx: ScriptContext, module) -> Type:
    """The return type of a function with early returns and no annotation: compile its returns once."""
    source = get_source(fn)
    tree = parse_function(fn, source)
    probe = Graph("probe")
    compiler = Compiler(ctx, source, fn, None)
    compiler.block = probe.block
    params = _signature_params(compiler, tree)
    args = {}
    if module is not None:
        compiler.self_value = SugaredModule(module, probe.add_input(ModuleType(), "self"), "")
        params = params[1:]
    for name, declared, _ in params:
        args[name] = probe.add_input(declared if declared is not None else TensorType(), name)
    compiler.return_flag = compiler.fresh("probe")
    compiler.env = [dict(args)]
    compiler.assign(compiler.return_flag, compiler.const(False))
    compiler.return_type = None
    compiler.assign("$retval", compiler.const(None))
    compiler.compile_body(_suite(tree.children[-1]))
    types = compiler.return_types
    if not types:
        return NoneType
    result = types[0]
    for t in types[1:]:
        merged = unify(result, t)
        if merged is None:
            raise source.error(f"Previous return statement returned a value of type {result} but this return "
                               f"statement returns a value of type {t}", tree.meta)
        result = merged
    probe.block.clear()
    return result


