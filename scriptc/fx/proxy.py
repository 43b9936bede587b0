"""torch.fx.Proxy: the stand-in value symbolic tracing passes through a program; every operator, method
call and attribute read on it records a Node."""

from __future__ import annotations

import dis
import enum
import inspect
import operator
from bisect import bisect_left
from typing import Any, Callable, Iterator

from scriptc.fx.codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS
from scriptc.fx.graph import Graph
from scriptc.fx.node import Node, map_arg
from scriptc.fx.torch_functions import record_torch_functions_while_alive

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "TracerBase", "GraphAppendingTracer"]


class TraceError(ValueError):
    """A program did something symbolic tracing cannot record (control flow on a traced value, iteration)."""


def _base_types() -> tuple:
    import scriptc
    return (str, int, float, bool, complex, scriptc.dtype, scriptc.Tensor, scriptc.device, scriptc.memory_format)


class TracerBase:
    """What a Proxy needs from its tracer: create_node/create_proxy, create_arg, and the hooks for
    bool(), iteration and ** unpacking of a traced value."""

    graph: Graph
    trace_asserts: bool = False
    # Whether reading a buffer of the traced module gives a Proxy (torch's default: no, the tensor itself,
    # which becomes a get_attr node where it meets a Proxy).
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"

    def create_node(self, kind: str, target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Insert one node into the graph being built (override to annotate or rewrite nodes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any | None = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record a node whose arguments may hold Proxies and constants; return a Proxy for its value."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any):
        """Lower a traced-program value into what a node may hold: Nodes, containers, plain constants."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(type(a), "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            items = [self.create_arg(e) for e in a]
            return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            lowered = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    map_arg(self.create_arg(k), _refuse_node_key)
                lowered[k] = self.create_arg(v)
            return lowered
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, (*_base_types(), enum.Enum)) or a is None or a is ...:
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """bool() of a traced value; a custom tracer may return a value instead of raising."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Iteration over a traced value; a custom tracer may return an iterator instead of raising."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a "
                         "loop or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org "
                         "for a more detailed explanation of what types of control flow can be traced, and check "
                         "out the Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Proxy:
        """`**proxy`: records a call to its keys() method."""
        return Attribute(obj, "keys")()


def _refuse_node_key(node: Node):
    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {node}")


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made around an existing graph's Node: operations append to that graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.scope = None


class Proxy:
    """A traced value: operators, method calls, attribute reads and torch functions applied to it are
    recorded into the graph. It cannot be iterated or tested for truth (TraceError); wrap such code
    with torch.fx.wrap, or give it concrete_args."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            # A Proxy around a raw Node appends to that node's graph, whenever it is used.
            tracer = GraphAppendingTracer(node.graph)
            record_torch_functions_while_alive(tracer)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo) -> Proxy:
        import copy
        copied = Proxy.__new__(type(self))
        for k, v in self.__dict__.items():
            copied.__dict__[k] = copy.deepcopy(v, memo)
        return copied

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # `a, b = proxy` unpacks a known number of values: record one getitem each.
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        current = instructions[bisect_left(instructions, frame.f_lasti, key=lambda i: i.offset)]
        if current.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(current.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")


class Attribute(Proxy):
    """`proxy.name`: becomes a method call when called, else a getattr node (added on first use)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy whose shape, size(), dim(), ndim, numel() and nelement() read the parameter
    itself (Tracer(param_shapes_constant=True)), so code may branch on them."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim: int | None = None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _install_operator(method: str) -> None:
    target = getattr(operator, method)

    def forward(*args, **kwargs) -> Proxy:
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)
    forward.__name__ = f"__{method.strip('_')}__"
    setattr(Proxy, forward.__name__, forward)


def _install_reflected(method: str) -> None:
    target = getattr(operator, method)

    def reflected(self: Proxy, rhs) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    reflected.__name__ = f"__r{method.strip('_')}__"
    setattr(Proxy, reflected.__name__, reflected)


for _method in MAGIC_METHODS:
    _install_operator(_method)
for _method in REFLECTABLE_MAGIC_METHODS:
    if _method != "getitem":
        _install_reflected(_method)
