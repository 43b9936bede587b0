"""freeze: module parameters, buffers and attributes become constants (torch.jit.freeze)."""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Graph, Node, walk
from scriptc.types import DictType, ListType, ModuleType, ObjectType, TensorType, TupleType, type_of_constant

from .analysis import mutated_values, read_only_list, written_through_views


def freeze(graph: Graph, module_value, preserved: frozenset = frozenset()) -> bool:
    """Replace prim::GetAttr chains from the graph's `self` input with constants read from
    `module_value` (a runtime ModuleValue). Attributes the graph writes (running stats in training
    mode) and those `preserved` names (dotted paths: `sub.a`, or `sub` for all of it) stay
    attributes. When nothing reads `self` any more, the input is removed."""
    if not graph.inputs or not isinstance(graph.inputs[0].type, ModuleType):
        return False
    if any(v is graph.inputs[0] for v in graph.outputs):
        raise RuntimeError("attempted to freeze a module that return itself")
    written = {id(v) for n in walk(graph.block) for v in mutated_values(n)}
    assigned = {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::SetAttr"}
    # (A tensor written through a view of it - y = self.a.view(2, 3); y[0] += 1 - is no constant in
    # any of its reads: sum(self.a) after that must see the write.)
    assigned |= {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::GetAttr" and
                 isinstance(n.output.type, TensorType) and written_through_views(n.output)}
    _refuse_written_containers_that_overlap(graph, module_value)
    # (A list another read of the attribute appends to - self.seen.append(t) - is no constant anywhere.)
    assigned |= {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::GetAttr" and
                 isinstance(n.output.type, ListType) and not read_only_list(n.output, written)}
    # (A value sharing memory with a written tensor - self.b = [self.a, t] while self.a[1] += 10 - sees
    # the write, so it is no constant either.)
    written_arrays: list = []
    for node in walk(graph.block):
        if node.op == "prim::GetAttr" and isinstance(node.output.type, TensorType) and \
                (id(node.output) in written or node.attrs["name"] in assigned):
            _arrays(_resolve(node, graph.inputs[0], module_value), None, written_arrays)
    changed = False
    for node in list(walk(graph.block)):
        if node.op != "prim::GetAttr" or id(node.output) in written or node.attrs["name"] in assigned or \
                isinstance(node.output.type, (DictType, ObjectType)):
            continue  # the graph changes it (self.count += 1, self.names.append(...)): it stays an attribute
        if preserved and _is_preserved(_path(node, graph.inputs[0]), preserved):
            continue
        target = _resolve(node, graph.inputs[0], module_value)
        if target is _UNRESOLVED or isinstance(node.output.type, ModuleType) or \
                written_arrays and _shares_memory(target, written_arrays):
            continue
        target = _containers_copied(target)
        constant = Node("prim::Constant", [], [_constant_type(target, node.output.type)], {"value": target}, node.loc)
        constant.insert_before(node)
        node.output.replace_all_uses_with(constant.output)
        changed = True
    for node in reversed(list(walk(graph.block))):
        if node.op == "prim::GetAttr" and not node.output.uses:
            node.erase()
    self_value = graph.inputs[0]
    if not self_value.uses:
        graph.block.params.pop(0)
        for i, p in enumerate(graph.block.params):
            p.index = i
        changed = True
    return changed


_UNRESOLVED = object()


def _refuse_written_containers_that_overlap(graph: Graph, module_value) -> None:
    """torch's refusal of a module whose list, tuple or dict attribute has tensors written in place
    that share memory with another attribute's (self.b = [self.a, t]; self.b[0][0] += 1): which of
    the two a read sees cannot be kept apart once the attributes are frozen."""
    for node in walk(graph.block):
        if node.op != "prim::GetAttr" or not isinstance(node.output.type, (ListType, TupleType, DictType)) or \
                not written_through_views(node.output):
            continue
        container = _resolve(node, graph.inputs[0], module_value)
        if container is _UNRESOLVED:
            continue
        inside, elsewhere = [], []
        _arrays(container, None, inside)
        _arrays(module_value, id(container), elsewhere)
        if any(_shares_memory(a, elsewhere) for a in inside):
            raise RuntimeError(f"module contains attributes values that overlaps: attribute "
                               f"'{node.attrs['name']}' is written in place and shares memory with another attribute")


def _shares_memory(value, arrays: list) -> bool:
    found: list = []
    _arrays(value, None, found)
    return any(np.may_share_memory(a, b) for a in found for b in arrays)


def _arrays(value, skip: int | None, out: list) -> None:
    """The arrays in an attribute value or module (all but the container with id `skip`)."""
    if id(value) == skip:
        return
    if isinstance(value, np.ndarray):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _arrays(item, skip, out)
    elif isinstance(value, dict):
        for item in value.values():
            _arrays(item, skip, out)
    elif hasattr(value, "attributes") and isinstance(value.attributes, dict):  # a ModuleValue
        for item in value.attributes.values():
            _arrays(item, skip, out)


def _path(node: Node, self_value) -> str | None:
    """`sub.a` for self.sub.a's prim::GetAttr (None when the chain does not start at `self`)."""
    names = []
    current = node
    while current is not None and current.op == "prim::GetAttr":
        names.append(current.attrs["name"])
        if current.inputs[0] is self_value:
            return ".".join(reversed(names))
        current = current.inputs[0].node
    return None


def _is_preserved(path: str | None, preserved: frozenset) -> bool:
    return path is not None and any(path == p or path.startswith(p + ".") for p in preserved)


def _resolve(node: Node, self_value, module_value):
    path = []
    current = node
    while current is not None and current.op == "prim::GetAttr":
        path.append(current.attrs["name"])
        source = current.inputs[0]
        if source is self_value:
            break
        current = source.node
    else:
        return _UNRESOLVED
    value = module_value
    for name in reversed(path):
        try:
            value = value.get(name)
        except AttributeError:
            return _UNRESOLVED
    return value


def _containers_copied(value):
    """A folded attribute's value with its lists, dicts and tuples copied, as torch's frozen constants
    are (appending to the module's list later changes no frozen result). No copy of arrays: frozen
    weights stay the module's (or the archive's memory-mapped) arrays; the graph never writes them
    (attributes it writes are not folded)."""
    if type(value) is list:
        return [_containers_copied(v) for v in value]
    if type(value) is dict:
        return {k: _containers_copied(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(_containers_copied(v) for v in value)
    return value


def _constant_type(value, declared):
    if isinstance(value, np.ndarray):
        return declared if isinstance(declared, TensorType) else TensorType()
    if isinstance(declared, (ListType, TupleType)):  # (which may hold tensors: no constant's type does)
        return declared
    return type_of_constant(value)
