"""Calls: op-table ops matched by schema (tensor ops and the SCALAR ops behind Python builtins and
methods), methods of values, user functions (prim::Call of their own graph) and overloads."""

from __future__ import annotations

import inspect
from functools import lru_cache

from scriptc import ops
from scriptc.ir.graph import Value
from scriptc.ir.verify import fits
from scriptc.ops.rules import Unknown
from scriptc.types import (
    Bool,
    DeviceT,
    Float,
    FutureType,
    Int,
    ListType,
    ObjectType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
)

from .. import ast
from .types import assignable
from .values import (
    Builtin,
    ClassRef,
    IgnoredMethod,
    JitFunction,
    MethodRef,
    ModuleDictMethod,
    ModuleMethod,
    OpFunction,
    OverloadedFunction,
    Overloads,
    SugaredModule,
    SugaredTuple,
    TypeValue,
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
        args = [self.call_argument(a, hints.get(i)) for i, a in enumerate(node.args)]
        kwargs = {kw.name: self.call_argument(kw.value) for kw in node.keywords}
        self.at(node)
        return self.call(callee, args, kwargs, node, expected)

    def call_argument(self, node: ast.Node, expected=None):
        return self.expr(node, expected)

    def empty_literal_hints(self, callee, node: ast.Call) -> dict:
        """The declared types of a scripted function's parameters that a call passes an empty `[]`
        literal: torch types such a temporary list by the parameter (expects_ints([])), not a `{}`."""
        empty = [i for i, a in enumerate(node.args) if isinstance(a, ast.List) and not a.elts]
        if not empty or not isinstance(callee, UserFunction):
            return {}
        fn = callee.fn
        if getattr(fn, "_scriptc_unused", False) or getattr(fn, "_scriptc_ignore", False) or \
                self.functional_op(fn) is not None:
            return {}
        inputs = self.ctx.function_graph(fn, self, node)[0].inputs
        return {i: inputs[i].type for i in empty if i < len(inputs)}

    def call(self, callee, args: list, kwargs: dict, node: ast.Node, expected=None):
        if isinstance(callee, OpFunction):
            return self.call_op(callee.name, args, kwargs, node, namespaced=callee.namespaced)
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
        if isinstance(callee, ModuleMethod):
            return self.inline_method(callee.owner, callee.fn, args, kwargs, node)
        if isinstance(callee, IgnoredMethod):
            return self.call_ignored_method(callee, args, kwargs, node)
        if isinstance(callee, Overloads):
            return self.call_overloaded_method(callee, args, kwargs, node)
        if isinstance(callee, ModuleDictMethod):
            return SugaredTuple(self.module_dict_method(callee.owner, callee.name, node))
        if self.has_magic(callee, "__call__"):
            return self.object_method(callee, "__call__", args, kwargs, node)
        raise self.error(f"this {self.describe(callee)} is not callable in scripted code", node)

    # --- op-table ops ---------------------------------------------------------------------------
    def call_op(self, name: str, args: list, kwargs: dict, node, method: bool = False, namespaced: bool = False):
        """A tensor op of the table by base name, trying its overloads in table order (`namespaced`:
        also those that are only in a namespace such as torch.linalg)."""
        candidates = _tensor_overloads(name, method, namespaced)
        if not candidates:
            raise self.error(f"unknown builtin op '{name}'", node)
        if "out" in kwargs and not any("out" in op.arg_index for op in candidates):
            # torch.add(a, b, out=c): the result written into `out`, which the call returns
            kwargs = dict(kwargs)
            out = self.as_value(kwargs.pop("out"), node)
            result = self.call_overloads(name, candidates, args, kwargs, node)
            self.at(node)
            return self.emit_op(ops.OPS["write_out"], [out, self.as_value(result, node)], node)
        return self.call_overloads(name, candidates, args, kwargs, node)

    def python_op(self, name: str, args: list, kwargs: dict, node, failure: str | None = None):
        """A Python-value op (kind SCALAR) by base name: `len`, `upper`, `add`... (builtins.py)."""
        candidates = _python_overloads(name)
        if not candidates:
            raise self.error(failure or f"unknown builtin op '{name}'", node)
        return self.call_overloads(name, candidates, args, kwargs, node, failure)

    def call_overloads(self, name: str, candidates: list, args: list, kwargs: dict, node, failure=None):
        args = [self.op_argument(a, node) for a in args]
        kwargs = {k: self.op_argument(v, node) for k, v in kwargs.items()}
        reasons, refusals = [], []
        # a tensor where a number is declared is read as one (at run time) only when no overload takes it
        for from_tensor in (False, True):
            for op in candidates:
                bound = self.bind_schema(op, args, kwargs, from_tensor)
                if isinstance(bound, str):
                    if not from_tensor:
                        reasons.append(f"  {op.schema}\n    {bound}")
                    continue
                result = self.emit_op(op, bound, node)
                if result is not None:
                    return result
                if not from_tensor:
                    refusal = _rule_refusal(op, bound)
                    reasons.append(f"  {op.schema}\n    {refusal}")
                    if refusal is not _RULE_REFUSED:
                        refusals.append(refusal)
            if not any(isinstance(a, Value) and isinstance(a.type, TensorType) for a in [*args, *kwargs.values()]):
                break
        if failure is not None:
            raise self.error("\n".join([failure, *refusals]), node)
        raise self.error(f"Arguments for call are not valid; '{name}' accepts:\n" + "\n".join(reasons), node)

    def op_argument(self, value, node) -> Value:
        if isinstance(value, SugaredTuple):
            return self.as_value(value, node)
        if isinstance(value, TypeValue):
            raise self.error("a type cannot be passed to an op", node)
        return self.as_value(value, node)

    def bind_schema(self, op, args: list[Value], kwargs: dict[str, Value], from_tensor: bool = False):
        """The op's arguments in schema order (defaults as None), or why they do not fit: TorchScript's
        schema matching, with int[] varargs (x.view(2, 3)) and tuples for lists (`from_tensor`: and a
        tensor where an int, float or Scalar is declared, read as a number when called)."""
        params = op.schema.args
        positional = _positional(op)
        if "input" in kwargs and params and params[0].name == "self" and not args:
            kwargs = dict(kwargs)
            kwargs["self"] = kwargs.pop("input")  # torch.ceil(input=x)
        if len(args) > len(positional) or len(args) == len(positional) and args and (
                args[-1].type == Int or isinstance(args[-1].type, TensorType)):
            packed = self.pack_varargs(positional, args)
            if packed is None and len(args) > len(positional):
                return f"expected at most {len(positional)} arguments but got {len(args)}"
            args = packed or args
        bound = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                bound.append(kwargs[p.name])
            elif p.has_default:
                bound.append(None)
            else:
                return f"argument '{p.name}' not provided"
        extra = kwargs and set(kwargs) - {p.name for p in params[len(args):]}
        if extra:
            return f"unexpected keyword argument '{sorted(extra)[0]}'"
        out = []
        for p, v in zip(params, bound):
            if v is None:
                out.append(p.default)
                continue
            if not _fits(v.type, p.type):
                converted = self.schema_conversion(v, p.type, from_tensor)
                if converted is None:
                    return f"argument '{p.name}' expects {p.type}, but got {v.type}"
                v = converted
            out.append(self.scalar_argument(v, p.type, op))
        return out

    def pack_varargs(self, positional: list, args: list):
        """x.view(2, 3) / torch.zeros(2, 3) / torch.einsum("ij,jk", a, b): the trailing ints or tensors
        as the list the last positional parameter takes (TorchScript's varargs rule)."""
        last = len(positional) - 1
        if last < 0 or not isinstance(positional[last].type, ListType):
            return None
        elem, rest = positional[last].type.elem, args[last:]
        if isinstance(elem, TensorType):
            if not rest or not all(isinstance(v.type, TensorType) for v in rest):
                return None
        elif elem not in (Int, Float) or not all(v.type in (Int, Float) or v.type == elem for v in rest):
            return None
        return args[:last] + [self.emit1("prim::ListConstruct", rest, positional[last].type)]

    def schema_conversion(self, value: Value, expected: Type, from_tensor: bool = False):
        """Where an op's schema takes int[]: a tuple of ints; int, float, bool or Scalar (`from_tensor`):
        a one-element tensor's value; Device: a str."""
        if isinstance(expected, ListType) and isinstance(value.type, TupleType):
            return self.implicit_conversion(value, ListType(expected.elem if expected.elem != Scalar else Float))
        if from_tensor and isinstance(value.type, TensorType):
            return self.implicit_conversion(value, expected, from_tensor=True)
        if value.type == Str and expected in (DeviceT, OptionalType(DeviceT)):  # torch.zeros(2, device="cpu")
            return self.emit1("device.str", [value, self.shared_const(None)], DeviceT)
        return None

    def emit_op(self, op, bound: list, node):
        """Emit the op with its output types from its type rule; None when the rule rejects the
        arguments (so that the next overload is tried)."""
        values = [v if isinstance(v, Value) else self.shared_const(v) for v in bound]
        types = self.output_types(op, values)
        if types is None:
            return None
        if op.inplace_of is not None:
            types = [values[0].type]
        self.at(node)
        result = self.emit(op.name, values, types)
        if len(result.outputs) > 1:
            picked = _python_result(op, values, result.outputs)
            if picked is not None:
                return picked
            return SugaredTuple(result.outputs, tuple(op.result_names))
        return result.output

    def output_types(self, op, values: list[Value]) -> list[Type] | None:
        """Output types from the op's type rule where it agrees with the schema, else the schema's.
        A SCALAR op's rule decides (raising TypeError rejects the arguments)."""
        if op.kind == ops.SCALAR:
            return _scalar_types(op, tuple(v.type for v in values))
        key = tuple(_meta_key(self.static_meta(v)) for v in values)
        try:
            return list(_tensor_op_types(op, key))
        except TypeError:  # a constant that cannot be a cache key (an array): work it out directly
            return list(_tensor_op_types.__wrapped__(op, key))

    def static_meta(self, v: Value):
        """What a type rule sees for one argument: a constant's value, a tensor's type, or Unknown(type)."""
        if v.node is not None and v.node.op == "prim::Constant":
            return v.node.attrs["value"]
        if isinstance(v.type, TensorType):
            return v.type
        if v.node is not None and v.node.op == "prim::ListConstruct":
            return [self.static_meta(x) for x in v.node.inputs]
        return Unknown(v.type)

    # --- methods ----------------------------------------------------------------------------------
    def call_method(self, base: Value, name: str, args: list, kwargs: dict, node, expected=None):
        t = base.type
        if isinstance(t, TensorType):
            return self.tensor_method(base, name, args, kwargs, node, expected)
        if isinstance(t, ObjectType):
            return self.object_method(base, name, args, kwargs, node)
        if isinstance(t, FutureType) and name == "wait" and not args:
            return self.emit1("prim::Wait", [base], t.elem)
        if isinstance(t, ListType) and isinstance(t.elem, ObjectType) and name == "sort":
            if args or set(kwargs) - {"reverse"}:
                raise self.error("list.sort() takes only reverse= in scripted code", node)
            self.sort_objects(base, kwargs.get("reverse"), node)
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
    def call_function(self, fn, args: list, kwargs: dict, node):
        """A call of a Python function: prim::Call of its graph, or of the Python function itself
        when it is @jit.ignore'd; a @jit.unused one raises when called."""
        if getattr(fn, "_scriptc_unused", False):
            return self.call_unused(fn, node)
        if getattr(fn, "_scriptc_ignore", False):
            return self.call_ignored(fn, args, kwargs, node)
        functional = self.functional_op(fn)
        if functional is not None:
            return self.call_functional(fn, functional, args, kwargs, node)
        graph, name = self.ctx.function_graph(fn, self, node)
        values = self.bind_python(fn, graph.inputs, args, kwargs, node)
        self.at(node)
        result = self.emit("prim::Call", values, [o.type for o in graph.outputs], {"function": name})
        return result.output

    def bind_python(self, fn, params: list[Value], args: list, kwargs: dict, node, skip: int = 0) -> list[Value]:
        """Arguments for a Python signature, in parameter order, defaults filled and checked against
        the compiled parameter types."""
        signature = inspect.signature(fn)
        names = list(signature.parameters.values())[skip:]
        if len(args) > len(names):
            raise self.error(f"{fn.__name__}() takes {len(names)} arguments but {len(args)} were given", node)
        extra = set(kwargs) - {p.name for p in names}
        if extra:
            raise self.error(f"{fn.__name__}() got an unexpected keyword argument '{sorted(extra)[0]}'", node)
        values = []
        for i, (p, declared) in enumerate(zip(names, params)):
            if i < len(args):
                v = args[i]
            elif p.name in kwargs:
                v = kwargs[p.name]
            elif p.default is not inspect.Parameter.empty:
                v = self.default_value(p.default, declared.type, node)
            else:
                raise self.error(f"{fn.__name__}() missing required argument '{p.name}'", node)
            v = self.as_value(v, node)
            length = self.ctx.broadcast_lengths.get(fn, {}).get(p.name)
            if length and v.type in (Int, Float):  # a BroadcastingListN[T] parameter: one number stands for N
                v = self.emit1("prim::ListConstruct", [v] * length, ListType(v.type))
            values.append(self.coerce(v, declared.type, node, f"{fn.__name__}(): Expected a value of type "
                                      f"'{declared.type}' for argument '{p.name}' but instead found type "
                                      f"'{v.type}'.", from_tensor=True))
        return values

    def default_value(self, value, declared: Type, node) -> Value:
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            return self.const(value)
        if isinstance(value, (list, tuple, dict)):
            return self.container_constant(value, node, declared)
        from scriptc.types import device, dtype

        if isinstance(value, (dtype, device)):
            return self.const(value)
        raise self.error(f"default value {value!r} is not supported in scripted code", node)

    def functional_op(self, fn):
        """The op-table op a torch.nn.functional function wraps (F.relu -> relu; F.relu_ -> relu_),
        or None for functionals written in Python (compiled from their source like any function)."""
        if not (getattr(fn, "__module__", None) or "").startswith("scriptc.nn.functional"):
            return None
        name = fn.__name__  # (an F module's SCRIPTED_OPS names the op of an F function whose name another op has)
        target = getattr(inspect.getmodule(fn), "SCRIPTED_OPS", {}).get(name, ops.ALIASES.get(name, name))
        found = [op for op in ops.overloads(target.rstrip("_")) if op.kind != ops.SCALAR and op.name == target]
        return found[0] if found else None

    def call_functional(self, fn, op, args: list, kwargs: dict, node):
        """F.<op>(...): the arguments bound by F's Python signature, passed to the op by name; an
        F argument the op does not take (inplace, _stacklevel, reduce, ...) must keep its default."""
        signature = inspect.signature(fn)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"F.{fn.__name__}(): {exc}", node) from None
        named = dict(bound.arguments)
        for name, parameter in signature.parameters.items():
            # an F default the op has none for (F.instance_norm's weight=None): passed on
            if name not in named and name in op.arg_index and not op.schema.args[op.arg_index[name]].has_default \
                    and parameter.default is not inspect.Parameter.empty:
                named[name] = self.const(parameter.default)
        if self.static_bool(self.as_value(named.pop("inplace", self.const(False)), node)) and op.inplace is not None:
            op = op.inplace
        if self.static_bool(self.as_value(named.get("return_indices", self.const(False)), node)):
            # torch's boolean dispatch: return_indices=True is the op's `_with_indices` variant
            paired = [o for o in ops.overloads(f"{op.name}_with_indices") if o.kind != ops.SCALAR]
            if paired:
                op = paired[0]
                named.pop("return_indices")
        if "input" in named and "input" not in op.arg_index:
            # F's input is the op's first argument F has no name for (F.embedding_bag(input, weight)
            # is embedding_bag(weight, indices))
            unnamed = [a.name for a in op.schema.args if a.name not in signature.parameters]
            named[unnamed[0] if unnamed else op.schema.args[0].name] = named.pop("input")
        for name in [n for n in named if n not in op.arg_index]:
            value = self.as_value(named.pop(name), node)
            default = signature.parameters[name].default if name in signature.parameters else None
            constant = value.node.attrs.get("value") if value.node is not None and value.node.op == \
                "prim::Constant" else object()
            if constant != default and constant is not None:
                raise self.error(f"F.{fn.__name__}({name}=...) is not supported in scripted code", node)
        values = {k: self.op_argument(v, node) for k, v in named.items()}
        bound_values = self.bind_schema(op, [], values)
        if isinstance(bound_values, str):
            raise self.error(f"F.{fn.__name__}(): {bound_values}\n  schema: {op.schema}", node)
        return self.emit_op(op, bound_values, node)

    def call_overloaded(self, callee: OverloadedFunction, args: list, kwargs: dict, node):
        """@jit._overload: the first declaration whose parameter types take the arguments (missing
        ones take the implementation's defaults)."""
        values = [self.as_value(a, node) for a in args]
        kw_values = {k: self.as_value(v, node) for k, v in kwargs.items()}
        signature = inspect.signature(callee.fn)
        try:
            bound = signature.bind(*values, **kw_values)
        except TypeError as exc:
            raise self.error(f"{callee.fn.__name__}(): {exc}", node) from None
        for declaration in callee.declarations:
            types = self.ctx.declared_parameter_types(declaration, self)
            defaults_fit = all(name in bound.arguments or p.default is inspect.Parameter.empty or
                               assignable(self.default_value(p.default, types[name], node).type, types[name])
                               for name, p in signature.parameters.items() if name in types)
            if defaults_fit and all(assignable(v.type, types[name]) for name, v in bound.arguments.items()
                                    if name in types):
                graph, name = self.ctx.overload_graph(callee.fn, declaration, self, node)
                inputs = self.bind_python(callee.fn, graph.inputs, values, kw_values, node)
                self.at(node)
                return self.emit("prim::Call", inputs, [o.type for o in graph.outputs], {"function": name}).output
        described = ", ".join(str(v.type) for v in values)
        raise self.error(f"no overload of {callee.fn.__name__}() takes arguments of types ({described})", node)

    def call_overloaded_method(self, callee: Overloads, args: list, kwargs: dict, node):
        """@jit._overload_method: the module method inlined with the first declaration's types that
        take the arguments."""
        values = [self.as_value(a, node) for a in args]
        kw_values = {k: self.as_value(v, node) for k, v in kwargs.items()}
        for declaration in callee.declarations:
            types = self.ctx.declared_parameter_types(declaration, self)
            try:
                bound = inspect.signature(declaration).bind(None, *values, **kw_values)
            except TypeError:
                continue
            if all(assignable(v.type, types[name]) for name, v in bound.arguments.items() if name in types and
                   isinstance(v, Value)):
                return self.ctx.inline(callee.fn, callee.owner, values, kw_values, self, node, signature=declaration)
        described = ", ".join(str(v.type) for v in values)
        raise self.error(f"no overload of {callee.fn.__name__}() takes arguments of types ({described})", node)

    def call_ignored(self, fn, args: list, kwargs: dict, node):
        """A @jit.ignore'd function: left in Python, called through prim::Call (such a module runs but
        cannot be saved). Its return annotation gives the result type (Tensor without one)."""
        name = self.ctx.register_ignored(fn)
        values = [self.as_value(a, node) for a in args] + [self.as_value(v, node) for v in kwargs.values()]
        returns = self.ctx.ignored_return_type(fn, self)
        return self.emit1("prim::Call", values, returns, {"function": name})

    def call_unused(self, fn, node):
        self.emit("prim::RaiseException", [], [], {"message": f"RuntimeError: {fn.__qualname__} is a @torch.jit.unused "
                                                                "function and was called in scripted code"})
        returns = self.ctx.ignored_return_type(fn, self)
        return self.emit1("prim::Uninitialized", [], returns)


@lru_cache(maxsize=4096)
def _fits(actual: Type, expected: Type) -> bool:
    return fits(actual, expected)


class _NotConstant:
    """An argument python_result may not look at: only constants pick an op's eager result."""

    def __bool__(self):
        raise TypeError("not a constant")

    def __getattr__(self, name):
        raise TypeError("not a constant")


def _python_result(op, values: list[Value], outputs: list[Value]):
    """What the op returns in Python, where its flags pick among its outputs (torch.unique's
    return_inverse/return_counts), when those flags are constants; None otherwise."""
    if op.python_result is None:
        return None
    args = [v.node.attrs["value"] if v.node is not None and v.node.op == "prim::Constant" else _NotConstant()
            for v in values]
    try:
        picked = op.python_result(args, list(outputs))
    except Exception:  # noqa: BLE001 - a flag that is not a constant: all the outputs, as the schema says
        return None
    if isinstance(picked, Value):
        return picked
    if isinstance(picked, tuple) and all(isinstance(p, Value) for p in picked):
        return SugaredTuple(list(picked))
    return None


def _meta_key(meta):
    """A type rule's argument as a hashable key: ("t", TensorType) / ("u", type) / ("l", items) / ("c", value)."""
    if isinstance(meta, TensorType):
        return ("t", meta)
    if isinstance(meta, Unknown):
        return ("u", meta.type)
    if isinstance(meta, list):
        return ("l", tuple(_meta_key(m) for m in meta))
    return ("c", meta)


def _meta_of(key):
    kind, value = key
    if kind == "u":
        return Unknown(value)
    if kind == "l":
        return [_meta_of(k) for k in value]
    return value


_RULE_REFUSED = "the argument types do not fit its type rule"


def _rule_refusal(op, bound: list) -> str:
    """Why a Python-value op's type rule refused these arguments (its own words where it gives them)."""
    if op.kind == ops.SCALAR:
        try:
            op.shape(*[Unknown(v.type) for v in bound if isinstance(v, Value)])
        except TypeError as exc:
            if str(exc):
                return str(exc)
        except (ValueError, KeyError, IndexError):
            pass
    return _RULE_REFUSED


@lru_cache(maxsize=4096)
def _scalar_types(op, types: tuple):
    declared = op.schema.returns
    try:
        inferred = op.shape(*[Unknown(t) for t in types])
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return list(inferred) if isinstance(inferred, tuple) and len(declared) > 1 else [inferred]


@lru_cache(maxsize=4096)
def _tensor_op_types(op, key: tuple) -> tuple:
    """A tensor op's output types: its type rule's dtypes (shapes are left to shape inference), the
    schema's types where the rule cannot say."""
    declared = list(op.schema.returns)
    try:
        inferred = op.shape(*[_meta_of(k) for k in key])
    except Exception:  # noqa: BLE001 - a shape rule that cannot decide leaves the schema's types
        inferred = None
    if not isinstance(inferred, (tuple, list)) or len(declared) == 1:
        inferred = [inferred]
    if len(inferred) != len(declared):
        inferred = [None] * len(declared)
    out = []
    for t, d in zip(inferred, declared):
        if isinstance(d, TensorType):
            # (a dtype argument known only at run time, `x.to(y.dtype)`, comes back as Unknown)
            known = isinstance(t, TensorType) and not isinstance(t.dtype, Unknown)
            out.append(TensorType(t.dtype, None) if known else TensorType())
        elif d == Scalar:
            out.append(t if t in (Int, Float, Bool) else Scalar)
        elif isinstance(t, Type) and fits(t, d):
            out.append(t)
        elif isinstance(d, ListType) and isinstance(d.elem, TensorType):
            out.append(ListType(TensorType()))
        else:
            out.append(d)
    return tuple(out)


@lru_cache(maxsize=None)
def _positional(op) -> list:
    return [p for p in op.schema.args if not p.kwarg_only]


@lru_cache(maxsize=None)
def _tensor_overloads(name: str, method: bool, namespaced: bool = False) -> tuple:
    """The tensor ops a call of `name` may mean, in the order calls try them."""
    found = [op for op in ops.overloads(name) if op.kind != ops.SCALAR and (
        (op.method or _takes_self_tensor(op)) if method else op.function or namespaced and not op.method)]
    if name in ("max", "min"):
        found += ops.overloads("maximum" if name == "max" else "minimum")
    return tuple(found)


@lru_cache(maxsize=None)
def _python_overloads(name: str) -> tuple:
    """The SCALAR ops named `name` or `name.<overload>` (builtins.py's convention)."""
    return tuple(op for op in ops.overloads(name.split(".")[0]) if op.kind == ops.SCALAR and
                 (op.name == name or op.name.startswith(name + ".")))


def _takes_self_tensor(op) -> bool:
    """An op scripted code may call as a tensor method (x.new_zeros(...)) without a Python binding."""
    args = op.schema.args
    return bool(args) and args[0].name == "self" and args[0].is_tensor
