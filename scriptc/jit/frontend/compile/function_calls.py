"""Calls of user functions: prim::Call of their own graph, torch.nn.functional wrappers of ops and
@jit._overload declarations (ignored_calls.py has @jit.ignore'd and @jit.unused functions)."""

from __future__ import annotations

import inspect

from scriptc import ops
from scriptc.ir.graph import Value
from scriptc.types import (
    Float,
    Int,
    ListType,
    NoneType,
    OptionalType,
    Type,
)

from .types import assignable
from .values import (
    OverloadedFunction,
    Overloads,
)


class FunctionCalls:
    """Calls of Python functions from scripted code."""

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
        or None for functionals written in Python (compiled from their source like any function). An F
        module's SCRIPTED_OPS names the op of an F function whose name another op has ("": none, the
        function compiles from its source)."""
        if not (getattr(fn, "__module__", None) or "").startswith("scriptc.nn.functional"):
            return None
        name = fn.__name__
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
        implicit = getattr(inspect.getmodule(fn), "SCRIPTED_DEFAULTS", {}).get(fn.__name__)
        if implicit is not None:
            given = self.as_value(named.get(implicit[0], self.const(None)), node)
            if given.type == NoneType or isinstance(given.type, OptionalType):
                # torch computes such an argument in the scripted call (F.softmax's implicit dim, with its warning)
                named[implicit[0]] = self.call_function(implicit[1], [self.const(fn.__name__), named["input"], given],
                                                        {}, node)
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
        named.pop("_stacklevel", None)  # (where F's warnings point: any value, as in torch's script)
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
