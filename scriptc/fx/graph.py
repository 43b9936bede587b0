"""torch.fx.Graph: an ordered list of Nodes (placeholder ... output) that reads like the program it records."""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Any, Callable, Iterator

from scriptc.fx.codegen import Namespace, PythonCode, format_target, python_code, snake_case
from scriptc.fx.node import Node, map_arg
from scriptc.fx.torch_functions import unwrap_recording

__all__ = ["Graph", "PythonCode"]


class _NodeList:
    """A live view of a graph's nodes in order; safe to erase the current node while iterating."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        node = getattr(root, step)
        while node is not root:
            following = getattr(node, step)
            if not node._erased:
                yield node
            node = following

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


def _target_to_str(target) -> str:
    if callable(target):
        name = target.__name__
    else:
        name = target[2:-2] if target.startswith("__") and target.endswith("__") else target
    return snake_case(name)


class Graph:
    """The IR of torch.fx: build it with placeholder/get_attr/call_*/output (or create_node), edit it
    with inserting_before/after, erase_node, node_copy, graph_copy; print it; generate Python from it."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._namespace = Namespace()
        self._insert = self._root.prepend
        self._len = 0
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, module) -> None:
        self._owning_module = module

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order (a live view: len(), iteration, reversed())."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None) -> list[Node]:
        """The nodes with this op (and target, when given), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # --- building -------------------------------------------------------------------------
    def create_node(self, op: str, target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """A new node inserted at the current insert point (the end, unless inside inserting_before/after)."""
        target = unwrap_recording(target)
        candidate = name if name is not None else _target_to_str(target)
        node = Node(self, self._namespace.create_name(candidate, None), op, target,
                    () if args is None else args, {} if kwargs is None else kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph's function (with a default value when given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Read an attribute path of the owning module (a parameter, buffer or submodule)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """Call the owning module's submodule at `module_name`."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """Call a method on args[0] (`x.relu()`)."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any | None = None) -> Node:
        """Call a free function (`torch.relu`, `operator.add`, a wrapped user function)."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr: Any | None = None) -> Node:
        """The graph's return value (one output node per graph)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """Copy a node (from this or another graph) here, mapping its input Nodes through arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of g here (val_map maps g's nodes to ours and is filled in); returns the value
        g's output node would return, mapped into this graph, without adding an output node."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                result = map_arg(node.args[0], lambda n: val_map[n])
                return (result, node) if return_output_node else result
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_values = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_values is not None:
            value, output_node = output_values
            g.output(value, type_expr=getattr(output_node, "type", None))
        return g

    # --- editing --------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None):
        """Within this block, new nodes go just before n (at the start of the graph when n is None)."""
        return self._inserting(self._root.append if n is None else n.prepend)

    def inserting_after(self, n: Node | None = None):
        """Within this block, new nodes go just after n (at the end of the graph when n is None)."""
        return self._inserting(self._root.prepend if n is None else n.append)

    @contextlib.contextmanager
    def _inserting(self, insert: Callable[[Node], None]):
        saved, self._insert = self._insert, insert
        try:
            yield
        finally:
            self._insert = saved

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase nodes no one uses and that have no side effects; returns whether anything changed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: nodes belong here, names are unique, every input is defined
        before it is used, and get_attr/call_module targets exist on the owning module."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, "
                                       "but was used as an argument! If you are copying nodes from another "
                                       "graph, make sure to use ``arg_transform`` on node_copy() to remap "
                                       "values\n" + str(self))
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered\n"
                                       + str(self))
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
            if self.owning_module is not None and node.op in ("get_attr", "call_module"):
                self._check_target(node)

    def _check_target(self, node: Node) -> None:
        value, walked = self.owning_module, []
        for atom in node.target.split("."):
            if not hasattr(value, atom):
                kind = "submodule" if node.op == "call_module" else "attribute"
                raise RuntimeError(f"Node {node} target {node.target} references nonexistent {kind} {atom} of "
                                   f"{'.'.join(walked) if walked else 'root'}")
            value = getattr(value, atom)
            walked.append(atom)

    # --- printing and code generation -----------------------------------------------------
    def __str__(self) -> str:
        lines = ["graph():"] + ["    " + node.format_node() for node in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs), laid out like torch's."""
        rows = [[str(cell) for cell in (n.op, n.name, n.target, n.args, n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]

        def line(cells: list[str]) -> str:
            return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()
        print("\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(row) for row in rows]))

    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The Python source (and its globals) of a `forward(self, ...)` that runs this graph."""
        namespace = Namespace()
        for node in self.nodes:
            namespace.create_name(node.name, node)
        return python_code(list(self.nodes), root_module, namespace, verbose)

    def _format_target(self, base: str, target: str) -> str:
        return format_target(base, target)
