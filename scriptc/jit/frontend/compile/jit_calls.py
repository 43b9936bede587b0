"""torch.jit's and torch's helpers in scripted code: torch.jit.fork/wait, is_scripting, torch._check,
torch._assert, torch.tensor, torch.autograd.grad, the grad-mode context managers."""

from __future__ import annotations

import inspect

from scriptc.ir.graph import Graph, Value
from scriptc.types import Bool, FutureType, ListType, ObjectType, OptionalType, TensorType, TupleType

from .. import ast
from .values import Builtin, MethodRef, ModuleMethod, OpFunction, SugaredModule, UserFunction


class JitCalls:
    """Compiler mixin: calls of torch.jit's and torch's helpers that lower to their own nodes."""

    def fork(self, node: ast.Call):
        """torch.jit.fork(fn, *args): a prim::Fork of fn's graph, run on an inter-op thread; its
        Future's wait() gives the result."""
        if not node.args:
            raise self.error("torch.jit.fork() needs a function to call", node)
        callee = self.expr(node.args[0])
        args = [self.expr(a) for a in node.args[1:]]
        kwargs = {kw.name: self.expr(kw.value) for kw in node.keywords}
        self.at(node)
        if isinstance(callee, UserFunction) and not getattr(callee.fn, "_scriptc_ignore", False):
            graph, name = self.ctx.function_graph(callee.fn, self, node)
            values = self.bind_python(callee.fn, graph.inputs, args, kwargs, node)
        elif isinstance(callee, (ModuleMethod, SugaredModule)):
            owner = callee.owner if isinstance(callee, ModuleMethod) else callee
            fn = callee.fn if isinstance(callee, ModuleMethod) else type(owner.module).forward
            graph, name = self.ctx.module_method_graph(owner, fn, self, node)
            values = [owner.value] + self.bind_python(fn, graph.inputs[1:], args, kwargs, node, skip=1)
        elif isinstance(callee, MethodRef) and isinstance(callee.base.type, ObjectType):  # obj.method
            record = self.ctx.class_named(callee.base.type.name)
            graph, name = self.ctx.method_graph(record, callee.name, self, node)
            fn = getattr(record.cls, callee.name)
            values = [callee.base] + self.bind_python(fn, graph.inputs[1:], args, kwargs, node, skip=1)
        elif isinstance(callee, (OpFunction, Builtin)):  # torch.jit._fork(torch.neg, x)
            values = [self.as_value(a, node) for a in args] + [self.as_value(v, node) for v in kwargs.values()]
            graph, name = self.builtin_call_graph(callee, values, list(kwargs), node)
        elif isinstance(callee, Value):  # torch.jit.fork(x): torch's words
            raise self.error(f"cannot call a value of type '{callee.type}'", node.args[0])
        else:
            raise self.error("torch.jit.fork() takes a scripted function or a method of a module or object", node)
        return self.emit1("prim::Fork", values, FutureType(graph.outputs[0].type), {"function": name})

    def builtin_call_graph(self, callee, values: list[Value], keywords: list[str], node) -> tuple[Graph, str]:
        """A function graph whose inputs have the types of `values` and whose body calls the builtin or
        op `callee` on them (the last len(keywords) by keyword): what a forked builtin runs."""
        name = self.ctx.unique_name(f"fork[{callee.name}]")
        graph = Graph(name)
        compiler = type(self)(self.ctx, self.source, self.fn, graph.block)
        params = [graph.add_input(v.type, f"arg{i}") for i, v in enumerate(values)]
        positional = len(params) - len(keywords)
        result = compiler.call(callee, params[:positional], dict(zip(keywords, params[positional:])), node)
        graph.add_output(compiler.as_value(result, node))
        self.ctx.functions[name] = graph
        return graph, name

    def torch_check(self, args: list, kwargs: dict, node):
        """torch._check(cond, message=None): raises RuntimeError(message) unless cond."""
        given = len(args) + len(kwargs)
        if not 1 <= given <= 2:
            raise self.error(f"torch._check() expects 1 or 2 arguments, got {given}", node)
        unexpected = [k for k in kwargs if k not in ("cond", "message")]
        if unexpected:
            raise self.error(f"torch._check() got unexpected keyword argument '{unexpected[0]}'", node)
        if args and "cond" in kwargs:
            raise self.error("torch._check() got multiple values for argument 'cond'", node)
        if not args and "cond" not in kwargs:
            raise self.error("torch._check() missing required argument 'cond'", node)
        bound = inspect.signature(lambda cond, message=None: None).bind(*args, **kwargs)
        cond = self.as_bool(bound.arguments["cond"], node)
        message = "Expected cond to be True, but got False"
        if "message" in bound.arguments:
            text = bound.arguments["message"]
            constant = text.node.attrs.get("value") if isinstance(text, Value) and text.node is not None and \
                text.node.op == "prim::Constant" else None
            if not isinstance(constant, str):
                raise self.error("torch._check(): the message must be a string constant in scripted code", node)
            message = constant
        if self.static_bool(cond) is not True:
            self.emit_if(self.negate(cond), lambda: self.raises(f"RuntimeError: {message}"), None)
        return self.const(None)

    def call_jit(self, name: str, args: list, kwargs: dict, node, expected):
        if name == "is_scripting":
            return self.const(True)
        if name == "is_tracing":
            return self.const(False)
        if name == "_get_tracing_state":  # torch._C._get_tracing_state(): no tracer in scripted code
            return self.const(None)
        if name == "_check":
            return self.torch_check(args, kwargs, node)
        if name == "wait":
            future = self.as_value(self.one_argument("wait", args, kwargs, node), node)
            return self.emit1("prim::Wait", [future], future.type.elem)
        if name == "awaitable_nowait":
            value = self.as_value(self.one_argument("_awaitable_nowait", args, kwargs, node), node)
            return self.emit1("prim::Fork", [value], FutureType(value.type),
                              {"function": self.ctx.identity_function(value.type)})
        if name in ("tensor", "as_tensor"):
            return self.tensor_literal(name, args, kwargs, node)
        if name == "device":
            return self.python_op("device", args, kwargs, node)
        if name == "is_tensor":
            value = self.as_value(self.one_argument("is_tensor", args, kwargs, node), node)
            return self.const(isinstance(value.type, TensorType))
        if name == "_assert":
            condition = self.as_bool(args[0], node)
            failed = self.emit1("not.scalar", [condition], Bool)
            message = args[1] if len(args) > 1 else None
            text = "AssertionError"
            if isinstance(message, Value) and message.node is not None and message.node.op == "prim::Constant":
                text = f"AssertionError: {message.node.attrs['value']}"
            self.emit_if(failed, lambda: self.raises(text), None)
            return self.const(None)
        if name == "autograd.grad":
            return self.autograd_grad(args, kwargs, node)
        if name == "is_grad_enabled":
            if args or kwargs:
                raise self.error(f"torch.is_grad_enabled() expected 0 arguments but found {len(args) + len(kwargs)}",
                                 node)
            return self.emit1("grad_mode.is_enabled", [], Bool)
        if name in ("no_grad", "enable_grad"):
            raise self.error(f"torch.{name}() is only supported as a `with` context manager", node)
        return self.python_op(name, args, kwargs, node)

    def grad_mode_context(self, node: ast.Node) -> str | None:
        """"no_grad" or "enable_grad" when `node` is torch.no_grad() / torch.enable_grad(), else None."""
        if not isinstance(node, ast.Call) or node.args or node.keywords:
            return None
        found, obj = self.lookup_object(node.func)
        name = self.ctx.jit_functions.get(id(obj)) if found else None
        return name if name in ("no_grad", "enable_grad") else None

    def tensor_literal(self, name: str, args: list, kwargs: dict, node) -> Value:
        """torch.tensor(data, dtype=None, device=None, requires_grad=False): data a number, a (nested)
        list of numbers, or a tensor."""
        if not args:
            raise self.error(f"torch.{name}() needs data", node)
        data = self.as_value(args[0], node)
        options = {k: self.as_value(v, node) for k, v in kwargs.items()}
        unknown = set(options) - {"dtype", "device", "requires_grad"}
        if unknown:
            raise self.error(f"torch.{name}() got an unexpected keyword argument '{sorted(unknown)[0]}'", node)
        dtype = options.get("dtype", self.const(None))
        return self.emit1("tensor.data", [data, dtype, options.get("requires_grad", self.const(False))],
                          TensorType())

    def autograd_grad(self, args: list, kwargs: dict, node) -> Value:
        names = ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "allow_unused"]
        values = dict(zip(names, args))
        values.update(kwargs)
        unknown = set(values) - set(names)
        if unknown:
            raise self.error(f"torch.autograd.grad() got an unexpected keyword argument '{sorted(unknown)[0]}'", node)
        outputs = self.as_tensor_list(values["outputs"], node)
        inputs = self.as_tensor_list(values["inputs"], node)
        grad_outputs = values.get("grad_outputs")
        grad_outputs = self.as_value(grad_outputs, node) if grad_outputs is not None else self.const(None)
        flags = [self.as_value(values.get(k, self.const(None if k == "retain_graph" else False)), node)
                 for k in names[3:]]
        return self.emit1("grad.autograd", [outputs, inputs, grad_outputs] + flags,
                          ListType(OptionalType(TensorType())))

    def as_tensor_list(self, value, node) -> Value:
        value = self.as_value(value, node)
        if isinstance(value.type, TensorType):
            return self.emit1("prim::ListConstruct", [value], ListType(TensorType()))
        if isinstance(value.type, TupleType):
            return self.emit1("prim::ListConstruct", self.tuple_items(value), ListType(TensorType()))
        return value
