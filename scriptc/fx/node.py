"""torch.fx.Node: one operation of a Graph, with its arguments, its users and a `meta` dict for passes."""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Union

from scriptc.fx.immutable_collections import immutable_dict, immutable_list
from scriptc.fx.names import pretty_target, type_name

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Target", "Argument"]

# What a node calls (a function, or a method/module/attribute name) and what its arguments may hold.
Target = Union[Callable[..., Any], str]
Argument = Optional[Union[tuple, list, dict, slice, range, "Node", str, int, float, bool, complex]]

OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")
# Functions a graph keeps even when nothing uses their result (torch._assert, setitem).
_SIDE_EFFECTFUL_FUNCTIONS: set = {operator.setitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark `fn` as having side effects, so dead-code elimination keeps its calls; returns fn."""
    _SIDE_EFFECTFUL_FUNCTIONS.add(fn)
    return fn


def map_aggregate(a, fn: Callable):
    """Apply fn to every leaf of a (nested tuples, lists, dicts and slices), rebuilding the containers."""
    if isinstance(a, tuple):
        items = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn: Callable):
    """Apply fn to every Node in a (nested) argument structure, leaving other values as they are."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def format_arg(arg) -> str:
    """An argument as a printed graph shows it: `%name` for Nodes, containers element by element."""
    if isinstance(arg, list):
        return "[" + ", ".join(format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation: `op` (placeholder, get_attr, call_function, call_method, call_module, output),
    `target` (what it calls), `args`/`kwargs` (Nodes and constants), `users`, `name`, `meta`.

    Nodes form a doubly linked list inside their Graph; assigning `args`/`kwargs` keeps `users` right.
    """

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict, return_type=None) -> None:
        if op not in OPCODES:
            raise ValueError(f"Unknown opcode {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # --- position in the graph ------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert x before this node (moving it if it is already in the graph)."""
        if self is x:
            raise AssertionError("Cannot prepend self")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Insert x after this node (moving it if it is already in the graph)."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # --- arguments ------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The Nodes this node reads, in order of first appearance in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg) -> None:
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._input_nodes = {}
        self._args = map_aggregate(tuple(new_args), self._record_input)
        self._kwargs = map_aggregate(dict(new_kwargs), self._record_input)
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    def _record_input(self, value):
        if isinstance(value, Node):
            self._input_nodes.setdefault(value)
        return value

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read `replace_with` instead; returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if delete_user_cb(user):
                user.replace_input_with(self, replace_with)
                changed.append(user)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read `new_input` wherever this node read `old_input`."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # --- questions passes ask -------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node although nothing reads it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _SIDE_EFFECTFUL_FUNCTIONS
        if self.op == "call_module" and self.graph.owning_module is not None:
            return getattr(self.graph.owning_module.get_submodule(self.target), "_is_impure", False)
        return False

    # --- printing -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def format_node(self) -> str:
        """This node as one line of a printed graph: `%relu : [num_users=1] = call_method[target=relu](...)`."""
        typename = f"{type_name(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}"
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        return (f"{head}[target={pretty_target(self.target)}](args = {format_arg(self.args)}, "
                f"kwargs = {format_arg(self.kwargs)})")
