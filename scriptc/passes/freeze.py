"""freeze: module parameters, buffers and attributes become constants (torch.jit.freeze)."""

from __future__ import annotations

import numpy as np

from scriptc.ir.graph import Graph, Node, walk
from scriptc.types import DictType, ListType, ModuleType, ObjectType, TensorType, TupleType, type_of_constant

from .analysis import mutated_values, read_only_list, written_through_views


def freeze(graph: Graph, module_value) -> bool:
    """Replace prim::GetAttr chains from the graph's `self` input with constants read from
    `module_value` (a runtime ModuleValue). Attributes the graph writes (running stats in training
    mode) stay attributes. When nothing reads `self` any more, the input is removed."""
    if not graph.inputs or not isinstance(graph.inputs[0].type, ModuleType):
        return False
    written = {id(v) for n in walk(graph.block) for v in mutated_values(n)}
    assigned = {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::SetAttr"}
    # (A tensor written through a view of it - y = self.a.view(2, 3); y[0] += 1 - is no constant in
    # any of its reads: sum(self.a) after that must see the write.)
    assigned |= {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::GetAttr" and
                 isinstance(n.output.type, TensorType) and written_through_views(n.output)}
    # (A list another read of the attribute appends to - self.seen.append(t) - is no constant anywhere.)
    assigned |= {n.attrs["name"] for n in walk(graph.block) if n.op == "prim::GetAttr" and
                 isinstance(n.output.type, ListType) and not read_only_list(n.output, written)}
    changed = False
    for node in list(walk(graph.block)):
        if node.op != "prim::GetAttr" or id(node.output) in written or node.attrs["name"] in assigned or \
                isinstance(node.output.type, (DictType, ObjectType)):
            continue  # the graph changes it (self.count += 1, self.names.append(...)): it stays an attribute
        target = _resolve(node, graph.inputs[0], module_value)
        if target is _UNRESOLVED or isinstance(node.output.type, ModuleType):
            continue
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
    # No copy of arrays: frozen weights stay the module's (or the archive's memory-mapped) arrays;
    # the graph never writes them (attributes it writes were skipped above). Lists and dicts are
    # copied, as torch's frozen constants are: appending to the module's list later changes no
    # frozen result.
    return _containers_copied(value)


def _containers_copied(value):
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
