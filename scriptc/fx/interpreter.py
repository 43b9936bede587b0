"""torch.fx.Interpreter (run a GraphModule node by node, one overridable method per op) and
torch.fx.Transformer (run it on Proxies to build a new GraphModule)."""

from __future__ import annotations

import inspect
from typing import Any, Iterator

from scriptc.fx.graph import Graph
from scriptc.fx.graph_module import GraphModule
from scriptc.fx.node import Node, map_aggregate
from scriptc.fx.proxy import Proxy
from scriptc.fx.torch_functions import recording_torch_functions
from scriptc.fx._symbolic_trace import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a GraphModule's graph one node at a time. Override placeholder, get_attr, call_function,
    call_method, call_module, output (or run_node) to change what each kind of node does."""

    def __init__(self, module: GraphModule, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for used in node.all_input_nodes:
                    if used not in seen:
                        seen.add(used)
                        self.user_to_last_uses.setdefault(node, []).append(used)

    def run(self, *args, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on args (positional, one per placeholder) and return what its output returns."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    message = f"While executing {node.format_node()}"
                    message = f"{e.args[0]}\n\n{message}" if e.args else message
                    e.args = (f"{message}\nOriginal traceback:\n{node.stack_trace}",) + tuple(e.args[1:])
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """run() taking its inputs as one list, which it clears."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments' values, then dispatch to the method named after its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as stop:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from stop

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """The module attribute at a dotted path (`layer1.0.weight`)."""
        value = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n: Node):
        """args with each Node replaced by its computed value (lists and dicts as plain, mutable ones,
        since the values go to functions)."""
        if isinstance(args, Node):
            if args not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {args}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[args]
        if isinstance(args, tuple):
            items = [self.map_nodes_to_values(a, n) for a in args]
            return type(args)(*items) if hasattr(args, "_fields") else tuple(items)
        if isinstance(args, list):
            return [self.map_nodes_to_values(a, n) for a in args]
        if isinstance(args, dict):
            return {k: self.map_nodes_to_values(v, n) for k, v in args.items()}
        if isinstance(args, slice):
            return slice(*(self.map_nodes_to_values(a, n) for a in (args.start, args.stop, args.step)))
        return args


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Interpreter whose values are Proxies: override call_function & co. to rewrite nodes, then
    transform() returns a new GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        submodule = self.fetch_attr(target)
        return self.tracer.call_module(submodule, submodule.forward, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the graph on Proxies and return the GraphModule of what was recorded."""
        with recording_torch_functions():
            result = self.run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)
