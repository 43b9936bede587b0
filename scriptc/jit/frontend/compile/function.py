"""FunctionCompiler: one function body compiled into a block, from the concerns' mixins; and the
function-level parts: parameters and their types, returns, the return flag."""

from __future__ import annotations

import inspect

from scriptc.errors import NotSupportedError
from scriptc.ir.graph import Graph
from scriptc.types import Bool, Float, Int, ModuleType, NoneType, ObjectType, Str, TensorType

from .. import ast
from .analysis import Exits, ends_in_exit
from .annotations import Annotations, broadcast_length
from .attributes import Attributes
from .builtin_calls import BuiltinCalls
from .calls import Calls
from .classes import Classes
from .control import RETVAL, ControlFlow
from .emitter import Emitter
from .expressions import Expressions
from .function_calls import FunctionCalls
from .ignored_blocks import IgnoredBlocks
from .ignored_calls import IgnoredCalls
from .interfaces import Interfaces
from .jit_calls import JitCalls
from .loops import Loops
from .modules import Modules
from .op_calls import OpCalls
from .resolve import Resolver
from .statements import Statements
from .subscripts import Subscripts
from .types import unify


class FunctionCompiler(Statements, ControlFlow, Loops, Expressions, Subscripts, Attributes, Calls, OpCalls,
                       FunctionCalls, BuiltinCalls, JitCalls, Annotations, Resolver, Modules, Classes, Interfaces,
                       IgnoredBlocks, IgnoredCalls, Emitter):
    """Compiles one function body into the current block (statements.py, control.py, ... each
    hold one concern)."""

    statement_handlers: dict = {}
    expression_handlers: dict = {}

    def __init__(self, ctx, source, fn, block, self_value=None):
        super().__init__(ctx, source, fn, block, self_value)
        self.exits = Exits()
        self.loops: list = []
        self.return_flag: str | None = None
        self.return_type = None
        self.probing = False
        self.probed_returns: list = []

    def compile_body(self, definition: ast.FunctionDef, params: dict, declared_return) -> object:
        """Compile the body with `params` bound; returns the value the function returns."""
        body = list(definition.body)
        if not ends_in_exit(body):
            last = body[-1] if body else definition
            body.append(ast.Return(last.line, last.col, None))
        self.scopes[0].update(params)
        self.return_type = declared_return
        if self.exits.needs_return_flag(body):
            if self.return_type is None and not self.probing:
                self.return_type = self.ctx.probe_return_type(self, definition, params)
            self.return_flag = self.fresh("returned")
            self.bind(self.return_flag, self.const(False))
            if not self.probing:
                self.bind(RETVAL, self.emit1("prim::Uninitialized", [], self.return_type))
        self.statements(body)
        if self.probing:
            return None
        returned = self.read(RETVAL)
        if returned is None:  # every path raises: the declared type (never produced), else None
            declared = self.return_type
            return self.const(None) if declared is None or declared == NoneType else \
                self.emit1("prim::Uninitialized", [], declared)
        return returned

    def probed_type(self, definition: ast.FunctionDef):
        types = self.probed_returns
        if not types:
            return NoneType
        result = types[0]
        for t in types[1:]:
            merged = unify(result, t)
            if merged is None:
                raise self.error(f"Previous return statement returned a value of type {result} but this return "
                                 f"statement returns a value of type {t}", definition)
            result = merged
        return TensorType() if isinstance(result, TensorType) else result

    # --- signatures ------------------------------------------------------------------------------
    def parameter_types(self, definition: ast.FunctionDef, skip_self: bool) -> tuple[list, object]:
        """([(name, type)], return type or None) from annotations, else a `# type:` comment; an
        unannotated parameter is a Tensor."""
        params = list(definition.params)
        for p in params:
            if p.kind in ("varargs", "varkw"):
                raise self.error("Compiled functions can't take variable number of arguments (*args and **kwargs are not "
                                 "supported in scripted functions)", p, NotSupportedError)
            if p.kind == "keyword_only" and p.default is not None:
                raise self.error("Compiled functions can't take variable number of arguments or use keyword-only "
                                 "arguments with defaults", p.default, NotSupportedError)
            if p.kind == "positional_only":
                raise self.error("positional-only parameters (before '/') are not supported in scripted "
                                 "functions", p)
        if skip_self:
            params = params[1:]
        commented, comment_return = None, None
        if definition.type_comment is not None and not any(p.annotation is not None for p in params):
            commented, comment_return = self.type_comment_signature(definition.type_comment, definition)
            if commented is None:
                commented = [self.annotation_text(p.type_comment, p) if p.type_comment else TensorType()
                             for p in params]
            if len(commented) != len(params):
                raise self.error(f"the type comment gives {len(commented)} parameter types for {len(params)} "
                                 "parameters", definition)
        typed = []
        examples = self.ctx.example_types.get(self.fn) or []
        for i, p in enumerate(params):
            if p.annotation is not None:
                t = self.annotation(p.annotation)
                length = broadcast_length(p.annotation)
                if length is not None:
                    self.ctx.broadcast_lengths.setdefault(self.fn, {})[p.name] = length
            elif commented is not None:
                t = commented[i]
            elif i < len(examples) and examples[i] is not None:  # typed by jit.script's example_inputs
                t = examples[i]
            else:
                t = TensorType()
            self._check_default(p, t)
            typed.append((p.name, t))
        returns = self.annotation(definition.returns) if definition.returns is not None else comment_return
        return typed, returns


    def _check_default(self, param, t) -> None:
        """A number or string parameter's default is of its type, as torch checks it (`x: int = 'a'`)."""
        kinds = _DEFAULT_KINDS.get(t)
        if kinds is None or not isinstance(param.default, ast.Constant):  # (a computed default: checked where used)
            return
        default = param.default.value
        if default is not None and not isinstance(default, kinds):
            raise self.error(f'Expected a default value of type {t} on parameter "{param.name}".', param)


_DEFAULT_KINDS = {Int: int, Float: (int, float), Bool: (bool, int), Str: str}  # (torch takes 0 for a bool)


def build_graph(ctx, fn, definition: ast.FunctionDef, source, name: str, owner=None, self_type=None,
                hooks: bool = False, owner_path: str = "") -> Graph:
    """The graph of a free function, a module method (`owner`: the module, whose value is the first
    input) or a script class method (`self_type`: the object type). `hooks`: the method is the
    module's forward called as the module is (`module(x)`), its forward pre-hooks and hooks around it."""
    from .values import SugaredModule

    graph = Graph(name)
    compiler = FunctionCompiler(ctx, source, fn, graph.block)
    has_self = owner is not None or self_type is not None
    params, returns = compiler.parameter_types(definition, skip_self=has_self)
    bound = {}
    if owner is not None:
        compiler.self_value = SugaredModule(owner, graph.add_input(ModuleType(), "self"), owner_path)
        compiler.self_name = definition.params[0].name if definition.params else "self"  # (any name, as in Python)
    elif self_type is not None:
        bound[definition.params[0].name] = graph.add_input(self_type, "self")
    for param_name, t in params:
        bound[param_name] = graph.add_input(t, param_name)
    if isinstance(self_type, ObjectType) and definition.name == "__init__":
        returns = NoneType
    if hooks and owner is not None and (getattr(owner, "_forward_pre_hooks", None) or
                                        getattr(owner, "_forward_hooks", None)):
        compiler.at(definition)
        result = compiler.call_module(compiler.self_value, [bound[n] for n, _ in params], {}, definition)
    else:
        result = compiler.compile_body(definition, bound, returns)
    graph.add_output(compiler.as_value(result, definition))
    return graph


def python_defaults(fn) -> dict:
    """Parameter name -> Python default value of a function."""
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.default is not inspect.Parameter.empty}


def _handlers(prefix: str) -> dict:
    """AST class -> the FunctionCompiler method named `<prefix><class name>`."""
    out = {}
    for name in dir(ast):
        cls = getattr(ast, name)
        method = getattr(FunctionCompiler, prefix + name, None)
        if isinstance(cls, type) and issubclass(cls, ast.Node) and method is not None:
            out[cls] = method
    return out


FunctionCompiler.statement_handlers = _handlers("stmt_")
FunctionCompiler.expression_handlers = _handlers("expr_")
