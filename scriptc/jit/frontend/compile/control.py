"""Control flow: statement lists, if/else with SSA merging, exits (return, break, continue, raise).

A statement list is compiled in order; compiling a statement says whether it certainly exits
on every path - LEAVE (returns or raises: the function is left) or LOOP (breaks or continues: the
loop goes on with the variables' values) - after which the rest of the list is dead and not
compiled. `return`, `break` and `continue` that only may happen set flag variables (carried like
any variable), and the statements after them run under `if not <flags>:` - the form TorchScript's
exit transform gives. At a join, a variable assigned in a branch becomes a prim::If output; a
branch that leaves needs no value for it (it gets a prim::Uninitialized).
"""

from __future__ import annotations

from scriptc.errors import ScriptError
from scriptc.ir.graph import Block, Node, Value
from scriptc.types import Bool, NoneType, Str

from .. import ast
from .emitter import BranchScope
from .types import assignable, unify
from .values import Refined

RETVAL = "$retval"
LEAVE = "leave"  # a statement list that certainly returns or raises
LOOP = "loop"    # ... that certainly breaks or continues (its variables flow on in the loop)


def both(a, b):
    """The exit of two branches together: falls through when either does."""
    if not a or not b:
        return None
    return LOOP if LOOP in (a, b) else LEAVE


class Conflict:
    """A variable whose branches (or loop iterations) give it types that do not join: reading it
    afterwards is an error that says why."""

    def __init__(self, message: str):
        self.message = message


class ControlFlow:
    """Statement lists, if statements, exits and the join of branch scopes."""

    # --- statement lists ---------------------------------------------------------------------------
    def statements(self, stmts: list):
        """Compile `stmts` into the current block; their exit (LEAVE, LOOP) or None."""
        for index, stmt in enumerate(stmts):
            exit_kind = self.statement(stmt)
            if exit_kind:
                return exit_kind
            if index + 1 < len(stmts) and self.exits.may_exit(stmt):
                guard = self.not_exited()
                if guard is not None:
                    rest = stmts[index + 1:]
                    # where the guard fails a flag is set: a break/continue (values flow on) or a return
                    flagged = LOOP if self.loops and self.active_flags() != [self.return_flag] else LEAVE
                    return self.emit_if(guard, lambda: self.statements(rest), None, else_exit=flagged)
        return None

    def not_exited(self) -> Value | None:
        """`not (returned or broke or continued)` over the flags that may be set here, or None when
        none can be."""
        flags = [self.read(name) for name in self.active_flags() if self.lookup(name) is not None]
        flags = [f for f in flags if not _is_const(f, False)]
        if not flags:
            return None
        any_set = flags[0]
        for flag in flags[1:]:
            any_set = self.emit1("or.scalar", [any_set, flag], Bool)
        return self.emit1("not.scalar", [any_set], Bool)

    def active_flags(self) -> list[str]:
        names = [self.return_flag] if self.return_flag is not None else []
        if self.loops:
            names += [f for f in (self.loops[-1].break_flag, self.loops[-1].continue_flag) if f is not None]
        return names

    # --- if ---------------------------------------------------------------------------------------
    def stmt_If(self, node: ast.If):
        self.at(node)
        cond, (when_true, when_false) = self.condition(node.test)
        static = self.static_bool(cond)
        if static is not None:  # isinstance(), `is None` on a non-Optional, a constant: one branch only
            return self.refined_statements(node.body if static else node.orelse, when_true if static else when_false)
        self.at(node)
        return self.emit_if(cond, lambda: self.refined_statements(node.body, when_true),
                            lambda: self.refined_statements(node.orelse, when_false), written=True)

    def refined_statements(self, stmts: list, refinements: dict):
        self.scopes[-1].update(refinements)
        return self.statements(stmts)

    def condition(self, test: ast.Node):
        """(bool Value of `test`, (refinements when true, when false))."""
        refinements = self.refinements(test)
        return self.as_bool(self.expr(test), test), refinements

    def emit_if(self, cond: Value, then_body, else_body, else_exit=None, written: bool = False):
        """prim::If on cond; each body compiles into its branch and returns its exit (`else_exit`:
        the exit of an absent else). The branches' assignments are joined; returns the If's exit.
        `written`: an if statement of the user's (not the guard of what follows an early exit, an
        assert or a check), whose branches keep the types of the variables bound before it."""
        node = self.emit("prim::If", [cond], [])
        scopes, exits = [], []
        for body in (then_body, else_body):
            with self.inside(node.add_block(), BranchScope() if written else None) as scope:
                exits.append(body() if body is not None else else_exit)
                scopes.append(scope)
        self.join(node, scopes, exits)
        return both(*exits)

    def join(self, node: Node, scopes: list[dict], exits: list) -> None:
        """Make each variable assigned in a branch an output of the If node `node`."""
        names = list(dict.fromkeys(name for scope in scopes for name in scope))
        survivors = [i for i, e in enumerate(exits) if not e]
        for name in names:
            outer = self.lookup(name)
            values = [scope.get(name, outer) for scope in scopes]
            if all(v is outer or _refines(v, outer) for v in values):
                if len(survivors) == 1 and isinstance(values[survivors[0]], Refined):
                    kept = values[survivors[0]]  # `if x is None: return` refines x for what follows
                    self.scopes[-1][name] = Refined(kept.value, kept.type)
                continue
            narrow = [v.type if isinstance(v, Refined) and v.after_exit else None for v in values]
            values = [self.in_branch(v, node.blocks[i]) for i, v in enumerate(values)]
            self.join_variable(node, name, values, exits, narrow)

    def in_branch(self, value, block):
        """A branch's value as an IR value in that branch (a pending refinement is emitted there)."""
        if isinstance(value, Refined) and value.after_exit:
            return value.value
        if isinstance(value, Refined):
            with self.inside(block):
                refined = self.emit1("prim::Refine", [value.value], value.type)
            return refined
        return value

    def join_variable(self, node: Node, name: str, values: list, exits: list, narrow: list) -> None:
        live = [v for v, e in zip(values, exits) if e != LEAVE and v is not None]
        present = [v for v in values if v is not None]
        if not all(isinstance(v, Value) for v in present):
            if len(set(map(id, present))) == 1 and len(present) == len(values):
                self.scopes[-1][name] = present[0]
                return
            if any(isinstance(v, Conflict) for v in present):
                self.scopes[-1][name] = next(v for v in present if isinstance(v, Conflict))
                return
            self.scopes[-1][name] = Conflict(f"'{name}' is bound to a compile-time value (a module, function or "
                                             "tuple of them) in only one branch")
            return
        if any(v is None for v, e in zip(values, exits) if not e):
            where = "true" if values[0] is None else "false"
            self.scopes[-1][name] = Conflict(f"'{name}' is not defined in the {where} branch")
            return
        typed = live or present
        merged = self.declared.get(name)
        if merged is None:
            merged = typed[0].type
            for v in typed[1:]:
                merged = unify(merged, v.type)
                if merged is None:
                    break
        if merged is None:
            if name == RETVAL:
                raise self.error(f"Previous return statement returned a value of type {typed[0].type} but this "
                                 f"return statement returns a value of type {typed[1].type}")
            self.scopes[-1][name] = Conflict(
                f"Variable '{name}' has type {values[0].type} in the true branch and type {values[1].type} in the "
                "false branch, which do not unify")
            return
        for index, (block, value) in enumerate(zip(node.blocks, values)):
            with self.inside(block):
                if value is None or not assignable(value.type, merged) and exits[index] == LEAVE:
                    value = self.emit1("prim::Uninitialized", [], merged)
                block.add_return(value)
        out = node.add_output(merged)
        if not name.startswith("$"):
            out.name = name
        self.scopes[-1][name] = out
        # What follows runs only where no branch broke or continued: there the variable has the type
        # the surviving branches give it (the full type flows with break/continue to the loop).
        survivors = [n or v.type for v, e, n in zip(values, exits, narrow) if not e]
        if survivors and name not in self.declared:
            narrowed = survivors[0]
            for t in survivors[1:]:
                narrowed = unify(narrowed, t) or merged
            if narrowed != merged:
                self.scopes[-1][name] = Refined(out, narrowed, after_exit=True)

    def forget_exit_narrowing(self) -> None:
        """End of a loop body: what a break/continue branch left flows on at its full type."""
        scope = self.scopes[-1]
        for name, value in list(scope.items()):
            if isinstance(value, Refined) and value.after_exit:
                scope[name] = value.value

    def static_bool(self, value) -> bool | None:
        if isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant" and \
                isinstance(value.node.attrs["value"], bool):
            return value.node.attrs["value"]
        return None

    # --- exits ------------------------------------------------------------------------------------
    def stmt_Return(self, node: ast.Return):
        self.at(node)
        # the declared return type is the expression's type hint ([] and x.tolist() take it)
        value = self.as_value(self.expr(node.value, self.return_type), node.value) if node.value is not None \
            else self.const(None)
        if self.return_type is not None:  # (converted as a call's argument is: x.item() or a tensor for an int)
            value = self.coerce(value, self.return_type, node, "Return value was annotated as having type "
                                f"{self.return_type} but is actually of type {value.type}", from_tensor=True)
        if self.probing:
            self.probed_returns.append(value.type)
        else:
            self.bind(RETVAL, value)
        if self.return_flag is not None:
            self.bind(self.return_flag, self.const(True))
        return LEAVE

    def stmt_Raise(self, node: ast.Raise):
        self.at(node)
        if node.exc is None:
            return self.raises("Exception")
        text = self.runtime_message(node.exc)
        if text is not None:  # raise Exc(f"... {value}"): the message is formatted when it is raised
            self.emit("prim::RaiseException", [text], [], {"message": f"{self.exception_name(node.exc.func, True)}: "})
            return LEAVE
        return self.raises(self.exception_message(node.exc))

    def stmt_Assert(self, node: ast.Assert):
        self.at(node)
        cond, (when_true, _) = self.condition(node.test)
        static = self.static_bool(cond)
        if static is not True:
            failed = self.emit1("not.scalar", [cond], Bool)
            self.emit_if(failed, lambda: self.assertion_failed(node.msg), None)
        self.scopes[-1].update(when_true)
        return LEAVE if static is False else None

    def raises(self, message: str):
        self.emit("prim::RaiseException", [], [], {"message": message})
        return LEAVE

    def assertion_failed(self, msg: ast.Node | None):
        """The failing branch of an assert: its message is a constant, or a string formatted at run time."""
        if msg is None:
            return self.raises("AssertionError")
        text = self.message_text(msg)
        if text is None:
            return self.raises(f"AssertionError: {self.static_string(msg) or '<value>'}")
        self.emit("prim::RaiseException", [text], [], {"message": "AssertionError: "})
        return LEAVE

    def runtime_message(self, exc: ast.Node) -> Value | None:
        """The message of `Exc(arg)` as a string value, where arg is not a constant (an f-string, a
        formatted or concatenated string, a number); None where exception_message gives it."""
        if not isinstance(exc, ast.Call) or len(exc.args) != 1 or exc.keywords:
            return None
        return self.message_text(exc.args[0])

    def message_text(self, message: ast.Node) -> Value | None:
        """`message` as a string computed when raising, or None for a constant string or a message that
        uses what scripted code cannot compute (its text is then kept with {} for the values: the
        messages of torch's modules are written for eager Python)."""
        if self.static_string(message) is not None and not isinstance(message, ast.JoinedStr):
            return None
        scratch = Block()
        try:
            with self.inside(scratch):
                value = self.as_value(self.expr(message), message)
                text = value if value.type == Str else self.emit1("str.any", [value], Str)
        except ScriptError:
            scratch.clear()
            return None
        for node in scratch.nodes:
            self.block.append(node)
        return text

    def exception_message(self, exc: ast.Node) -> str:
        """The text of `raise Exc("message")` (TorchScript keeps the message, not the object)."""
        if isinstance(exc, ast.Call):
            name = self.exception_name(exc.func)
            parts = []
            for arg in exc.args:
                text = self.static_string(arg)
                parts.append(text if text is not None else "<value>")
            text = parts[0] if len(parts) == 1 else f"({', '.join(parts)})"  # as TorchScript writes args
            return f"{self.exception_name(exc.func, True)}: {text}" if parts else name
        return self.exception_name(exc)

    def exception_name(self, node: ast.Node, qualified: bool = False) -> str:
        """The raised class's name (`qualified`: with its module, as TorchScript names an exception raised
        with arguments: builtins.ValueError); a ScriptError where it names nothing, or no exception class."""
        name = _dotted(node)
        found, obj = self.lookup_object(node) if name is not None else (False, None)
        if not found:
            raise self.error(f"undefined value {name}" if name is not None else
                             "exceptions must derive from BaseException", node)
        if not (isinstance(obj, type) and issubclass(obj, BaseException)):
            raise self.error(f"exceptions must derive from BaseException, not {name}", node)
        return f"{obj.__module__}.{obj.__name__}" if qualified else name

    def static_string(self, node: ast.Node) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(p if isinstance(p, str) else "{}" for p in node.parts)
        return None

    def coerce(self, value: Value, target, node, message: str, from_tensor: bool = False) -> Value:
        """`value` as a `target`-typed value (a None literal for an Optional, an int for a float...),
        or a ScriptError with `message`."""
        if value.type == target:
            return value
        if assignable(value.type, target):
            return self.emit1("prim::Refine", [value], target) if value.type != NoneType else \
                self.emit1("prim::Refine", [value], target)
        converted = self.implicit_conversion(value, target, from_tensor)
        if converted is not None:
            return converted
        raise self.error(message, node)


def _is_const(value, expected) -> bool:
    return isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant" and \
        value.node.attrs.get("value") is expected


def _refines(value, outer) -> bool:
    """Whether a branch's binding only refines the outer variable (it was not assigned)."""
    if isinstance(value, Refined):
        return value.value is outer or (isinstance(outer, Refined) and value.value is outer.value)
    return isinstance(value, Value) and value.node is not None and value.node.op == "prim::Refine" and \
        (value.node.inputs[0] is outer or (isinstance(outer, Refined) and value.node.inputs[0] is outer.value))


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None
