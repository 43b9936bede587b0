"""Calls: expr_Call and the dispatch every call goes through, to op-table ops (op_calls.py), user
functions and overloads (function_calls.py), ignored and unused functions (ignored_calls.py),
builtins and methods of values."""

from __future__ import annotations

from scriptc.ir.graph import Value
from scriptc.types import (
    Bool,
    Float,
    FutureType,
    Int,
    InterfaceType,
    ListType,
    ObjectType,
    Str,
    TensorType,
)

from .. import ast
from .values import (
    Builtin,
    ClassRef,
    IgnoredMethod,
    JitFunction,
    MethodRef,
    ModuleChoice,
    ModuleDictMethod,
    ModuleMethod,
    OpFunction,
    OverloadedFunction,
    Overloads,
    SugaredModule,
    SugaredTuple,
    TracedFunction,
    UserFunction,
)

# Calls lowered from their argument expressions (types, attribute names, iterables), not their values.
_RAW_ARGUMENT_CALLS = ("isinstance", "jit.isinstance", "jit.annotate", "getattr", "hasattr", "jit.fork",
                       "jit._unwrap_optional", "range", "enumerate", "zip", "reversed")


class Calls:
    """expr_Call and the machinery every call goes through."""

    def expr_Call(self, node: ast.Call, expected=None):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "__getitem__":
            # x.__getitem__(i) is x[i], for every subscriptable value (torch's inp.__getitem__(indices))
            if len(node.args) != 1 or node.keywords:
                raise self.error("__getitem__ expected exactly 1 argument", node.func)
            return self.expr_Subscript(ast.Subscript(node.line, node.col, node.func.value, node.args[0]), expected)
        callee = self.expr(node.func)
        name = callee.name if isinstance(callee, Builtin) else (
            f"jit.{callee.name}" if isinstance(callee, JitFunction) else None)
        if name in _RAW_ARGUMENT_CALLS:
            self.at(node)
            return self.raw_argument_call(name, node, expected)
        hints = self.empty_literal_hints(callee, node)
        args = []
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred):
                args += self.spread_argument(a)
            else:
                args.append(self.call_argument(a, hints.get(i)))
        kwargs = {kw.name: self.call_argument(kw.value) for kw in node.keywords}
        self.at(node)
        return self.call(callee, args, kwargs, node, expected)

    def call_argument(self, node: ast.Node, expected=None):
        return self.expr(node, expected)

    def spread_argument(self, node: ast.Starred) -> list:
        """`*t` in a call: a tuple's items as arguments (torchvision's x.new_zeros(*size_dhw))."""
        value = self.expr(node.value)
        if not self.tuple_like(value):
            kind = self.as_value(value, node).type
            raise self.error("cannot statically infer the expected size of a list in this context"
                             if isinstance(kind, ListType) else f"a starred call argument must be a tuple, got {kind}", node)
        return self.tuple_elements(value, node)

    def empty_literal_hints(self, callee, node: ast.Call) -> dict:
        """The declared types of a scripted function's parameters that a call passes an empty `[]`
        literal: torch types such a temporary list by the parameter (expects_ints([])), not a `{}`."""
        empty = [i for i, a in enumerate(node.args) if isinstance(a, ast.List) and not a.elts]
        if not empty or not isinstance(callee, UserFunction) or any(isinstance(a, ast.Starred) for a in node.args):
            return {}
        fn = callee.fn
        if getattr(fn, "_scriptc_unused", False) or getattr(fn, "_scriptc_ignore", False) or \
                self.functional_op(fn) is not None:
            return {}
        inputs = self.ctx.function_graph(fn, self, node)[0].inputs
        return {i: inputs[i].type for i in empty if i < len(inputs)}

    def call(self, callee, args: list, kwargs: dict, node: ast.Node, expected=None):
        if isinstance(callee, OpFunction):
            return self.call_op(callee.name, args, kwargs, node, namespaced=callee.namespaced, aten=callee.aten)
        if isinstance(callee, MethodRef):
            return self.call_method(callee.base, callee.name, args, kwargs, node, expected)
        if isinstance(callee, Builtin):
            return self.call_builtin(callee.name, args, kwargs, node, expected)
        if isinstance(callee, JitFunction):
            return self.call_jit(callee.name, args, kwargs, node, expected)
        if isinstance(callee, UserFunction):
            return self.call_function(callee.fn, args, kwargs, node)
        if isinstance(callee, OverloadedFunction):
            return self.call_overloaded(callee, args, kwargs, node)
        if isinstance(callee, ClassRef):
            return self.construct(callee, args, kwargs, node)
        if isinstance(callee, SugaredModule):
            return self.call_module(callee, args, kwargs, node)
        if isinstance(callee, TracedFunction):
            return self.call_traced_function(callee.scripted, args, kwargs, node)
        if isinstance(callee, ModuleChoice):
            return self.call_chosen(callee, args, kwargs, node)
        if isinstance(callee, ModuleMethod):
            return self.inline_method(callee.owner, callee.fn, args, kwargs, node)
        if isinstance(callee, IgnoredMethod):
            return self.call_ignored_method(callee, args, kwargs, node)
        if isinstance(callee, Overloads):
            return self.call_overloaded_method(callee, args, kwargs, node)
        if isinstance(callee, ModuleDictMethod):
            return SugaredTuple(self.module_dict_method(callee.owner, callee.name, node))
        if isinstance(callee, Value) and isinstance(callee.type, InterfaceType):  # (torch calls only its methods)
            raise self.error(f"cannot call a value of type '__torch__.{callee.type.name}'", node)
        if self.has_magic(callee, "__call__"):
            return self.object_method(callee, "__call__", args, kwargs, node)
        raise self.error(f"this {self.describe(callee)} is not callable in scripted code", node)

    # --- op-table ops ---------------------------------------------------------------------------

    def call_method(self, base: Value, name: str, args: list, kwargs: dict, node, expected=None):
        t = base.type
        if isinstance(t, TensorType):
            return self.tensor_method(base, name, args, kwargs, node, expected)
        if isinstance(t, InterfaceType):
            return self.interface_call(base, name, args, kwargs, node)
        if isinstance(t, ObjectType):
            return self.object_method(base, name, args, kwargs, node)
        if isinstance(t, FutureType) and name == "wait" and not args:
            return self.emit1("prim::Wait", [base], t.elem)
        if isinstance(t, ListType) and isinstance(t.elem, ObjectType) and name == "sort":
            if len(args) + len(kwargs) > 1 or set(kwargs) - {"reverse"}:
                raise self.error("list.sort() takes only reverse (sort(self, bool reverse=False)) in scripted code",
                                 node)
            reverse = args[0] if args else kwargs.get("reverse")
            if reverse is not None and self.as_value(reverse, node).type != Bool:
                raise self.error(f"sort(): Expected a value of type 'bool' for argument 'reverse' but instead found "
                                 f"type '{self.as_value(reverse, node).type}'.", node)
            self.sort_objects(base, reverse, node)
            return self.const(None)
        if t == Str and name == "format":
            if kwargs:
                raise self.error("str.format() takes positional arguments only in scripted code", node)
            values = self.make_tuple([self.as_value(a, node) for a in args])
            return self.emit1("format.str", [base, values], Str)
        number = {Int: int, Float: float, Bool: bool}.get(t)
        if number is not None and not hasattr(number, name):
            # (the op table's `add`, `mul`... are operators, not methods of a number, as torch says)
            raise self.error(f"'{t}' object has no attribute or method '{name}'", node)
        return self.python_op(name, [base] + args, kwargs, node, failure=f"'{t}' has no method '{name}' in "
                              "scripted code (or not with these arguments)")

    # --- user functions --------------------------------------------------------------------------
