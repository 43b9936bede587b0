"""Whole-archive checks, once every member has parsed: what the graphs say against what the archive
holds. Each method's signature in the manifest is its graph's; every attribute a method reads exists
and has the type the graph gives it (a weight's dtype and fixed dims, a flag's scalar type); every
prim::Call names a function of the archive, none calls itself (directly or through others), and no
method grows past MAX_INLINED_NODES once its calls are inlined. All iterative, but for a value
checked against its type (values.match: once per level of the type, at most 64): a hostile archive
cannot reach the recursion limit. A problem is an ArchiveError naming the member and the node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scriptc.errors import ArchiveError
from scriptc.ir.graph import Graph, walk
from scriptc.types import (
    Complex,
    DeviceT,
    DictType,
    DType,
    ListType,
    ModuleType,
    ObjectType,
    TensorType,
    TupleType,
    Type,
)

from .limits import MAX_INLINED_NODES
from .objects import ScriptObject
from .values import Policy, match, tensor_difference


def check_archive(kind: str, graphs: dict[str, Graph], functions: dict[str, Graph], signatures: dict,
                  values: dict[str, Any]) -> None:
    """Raise ArchiveError where the graphs disagree with the signatures, the weights and attributes
    (`values`, by dotted name), or call functions they must not."""
    for name, graph in graphs.items():
        where = f"graphs/{name}.ir"
        takes_self = bool(graph.inputs) and isinstance(graph.inputs[0].type, ModuleType)
        if kind == "function" and takes_self:
            raise ArchiveError(f"{where}: a function archive's graph takes a module")
        _check_signature(graph, signatures.get(name, {}), 1 if takes_self else 0, where)
        if takes_self:
            _check_attributes(graph, values, where)
    _check_object_fields(functions, values)
    _check_calls(graphs, functions)


def _check_signature(graph: Graph, signature: dict, skip: int, where: str) -> None:
    inputs, outputs = signature.get("inputs"), signature.get("outputs")
    declared = [str(v.type) for v in graph.inputs[skip:]]
    if inputs is not None:
        if not isinstance(inputs, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("type"), str)
                for e in inputs):
            raise ArchiveError(f"manifest.json: {where}'s signature inputs must be a list of "
                               "{\"name\": ..., \"type\": ...}")
        if [e["type"] for e in inputs] != declared:
            raise ArchiveError(f"manifest.json: the signature's inputs {[e['type'] for e in inputs]} are not "
                               f"those of {where} {declared}")
    if outputs is not None and outputs != [str(v.type) for v in graph.outputs]:
        raise ArchiveError(f"manifest.json: the signature's outputs {outputs} are not those of {where} "
                           f"{[str(v.type) for v in graph.outputs]}")


def _check_attributes(graph: Graph, values: dict[str, Any], where: str) -> None:
    """Follow every prim::GetAttr chain from the graph's module input through `values`, and on through
    the fields of the script objects it reaches."""
    modules: dict[int, str] = {id(graph.inputs[0]): ""}
    objects: dict[int, ScriptObject] = {}
    for node in walk(graph.block):
        if node.op != "prim::GetAttr" or id(node.inputs[0]) not in modules and id(node.inputs[0]) not in objects:
            continue
        name = node.attrs["name"]
        if not isinstance(name, str):
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} names {name!r}, not a string")
        declared = node.output.type
        if id(node.inputs[0]) in objects:
            obj = objects[id(node.inputs[0])]
            path, found, value = f"the {obj.class_name} object's '{name}'", name in obj.attributes, obj.attributes.get(name)
        else:
            owner = modules[id(node.inputs[0])]
            dotted = f"{owner}.{name}" if owner else name
            path, found, value = f"'{dotted}'", dotted in values, values.get(dotted)
            if isinstance(declared, ModuleType):
                if found:
                    raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads {path} as a module, but the "
                                       f"archive holds a value there")
                modules[id(node.output)] = dotted
                continue
        if not found:
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads {path}, which the archive does not "
                               "contain")
        problem = _type_problem(value, declared)
        if problem is not None:
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads {path} as {declared}, but {problem}")
        if isinstance(value, ScriptObject):
            objects[id(node.output)] = value


def _check_object_fields(functions: dict[str, Graph], values: dict[str, Any]) -> None:
    """The fields of the archive's script objects have the types their class's methods read them as."""
    reads: dict[tuple[str, str], dict[Type, str]] = {}  # (class, field) -> each type it is read as, and where
    for name, graph in functions.items():
        owner = graph.inputs[0].type if graph.inputs else None
        if not isinstance(owner, ObjectType):
            continue
        for node in walk(graph.block):
            if node.op == "prim::GetAttr" and node.inputs[0] is graph.inputs[0]:
                reads.setdefault((owner.name, node.attrs["name"]), {}).setdefault(
                    node.output.type, f"functions/{name}.ir: prim::GetAttr{_at(node)}")
    pending = [v for v in values.values() if isinstance(v, ScriptObject)]
    while pending:
        obj = pending.pop()
        for field, value in obj.attributes.items():
            for declared, where in reads.get((obj.class_name, field), {}).items():
                problem = _type_problem(value, declared)
                if problem is not None:
                    raise ArchiveError(f"{where} reads '{field}' of a {obj.class_name} object as {declared}, "
                                       f"but {problem}")
            if isinstance(value, ScriptObject):
                pending.append(value)


class _Attributes(Policy):
    """An attribute's value (from the manifest's JSON, or a weight) against the type a graph reads it
    as. Where the archive cannot store a type's values (complex, Device, ScalarType, an Enum) or the
    walk does not know the type, the ops that use the value check it."""

    widens = True
    unchecked = frozenset({Complex, DeviceT, DType})
    checks_enums = False
    unknown_fits = True

    def tensor(self, value, t: TensorType) -> tuple[str | None, Any]:
        if not isinstance(value, np.ndarray):
            return self.refuse(value, t), None
        if tensor_difference(value, t) is not None:
            return f"it is {value.dtype.name} {list(value.shape)}", None
        return None, value

    def refuse(self, value, t: Type) -> str:
        if isinstance(t, (TensorType, ListType, TupleType, DictType)):
            return f"it holds a {type(value).__name__}"
        return f"it holds {value!r}"

    def wrong_length(self, value, t: TupleType) -> str:
        return f"it holds {len(value)} items"

    def dict_items(self, value: dict, t: DictType):
        return (pair for k, v in value.items() for pair in ((k, t.key), (v, t.value)))


_ATTRIBUTES = _Attributes()


def _type_problem(value, declared: Type) -> str | None:
    """Why `value` does not have the IR type `declared`, or None."""
    problem, _ = match(value, declared, _ATTRIBUTES)
    return problem


def _at(node) -> str:
    return f" at {node.loc}" if node.loc is not None else ""


def _check_calls(graphs: dict[str, Graph], functions: dict[str, Graph]) -> None:
    """Every prim::Call names a function of the archive; the calls form no cycle; inlining them all
    keeps each graph under MAX_INLINED_NODES."""
    calls: dict[tuple, list[str]] = {}
    own: dict[tuple, int] = {}
    for kind, table in (("graphs", graphs), ("functions", functions)):
        for name, graph in table.items():
            key = (kind, name)
            calls[key], own[key] = [], 0
            for node in walk(graph.block):
                own[key] += 1
                if node.op != "prim::Call":
                    continue
                target = node.attrs["function"]
                if not isinstance(target, str) or target not in functions:
                    raise ArchiveError(f"{kind}/{name}.ir: prim::Call{_at(node)} to {target!r}, which is not a "
                                       f"function of the archive (it has: {sorted(functions)})")
                calls[key].append(target)
    # Depth-first, iteratively: a function met again while it is on the path is a cycle.
    size: dict[tuple, int] = {}
    for root in calls:
        if root in size:
            continue
        path, on_path = [(root, iter(calls[root]))], {root}
        while path:
            key, pending = path[-1]
            callee = next(pending, None)
            if callee is None:
                path.pop()
                on_path.discard(key)
                size[key] = own[key] + sum(size[("functions", c)] for c in calls[key])
                if size[key] > MAX_INLINED_NODES:
                    raise ArchiveError(f"{key[0]}/{key[1]}.ir: inlining its calls makes {size[key]} nodes "
                                       f"(at most {MAX_INLINED_NODES})")
                continue
            target = ("functions", callee)
            if target in on_path:
                cycle = [k[1] for k, _ in path[[k for k, _ in path].index(target):]] + [callee]
                raise ArchiveError(f"{key[0]}/{key[1]}.ir: function '{callee}' calls itself "
                                   f"({' -> '.join(cycle)})")
            if target not in size:
                path.append((target, iter(calls[target])))
                on_path.add(target)
