"""Whole-archive checks, once every member has parsed: what the graphs say against what the archive
holds. Each method's signature in the manifest is its graph's; every attribute a method reads exists
and has the type the graph gives it (a weight's dtype and fixed dims, a flag's scalar type); every
prim::Call names a function of the archive, none calls itself (directly or through others), and no
method grows past MAX_INLINED_NODES once its calls are inlined. All iterative: a hostile archive
cannot reach the recursion limit. A problem is an ArchiveError naming the member and the node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scriptc.errors import ArchiveError
from scriptc.ir.graph import Graph, walk
from scriptc.types import Bool, Float, Int, ModuleType, NoneType, OptionalType, Str, TensorType, Type

from .limits import MAX_INLINED_NODES

# The scalar types an attribute's value may have for each IR type it may be given.
_SCALARS: dict[Type, tuple] = {Bool: (bool,), Int: (int,), Float: (float, int), Str: (str,), NoneType: (type(None),)}


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
    """Follow every prim::GetAttr chain from the graph's module input through `values`."""
    paths: dict[int, str] = {id(graph.inputs[0]): ""}
    for node in walk(graph.block):
        if node.op != "prim::GetAttr" or id(node.inputs[0]) not in paths:
            continue
        name = node.attrs["name"]
        if not isinstance(name, str):
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} names {name!r}, not a string")
        owner = paths[id(node.inputs[0])]
        path = f"{owner}.{name}" if owner else name
        declared = node.output.type
        if isinstance(declared, ModuleType):
            if path in values:
                raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads '{path}' as a module, but the "
                                   f"archive holds a value there")
            paths[id(node.output)] = path
            continue
        if path not in values:
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads '{path}', which the archive does not "
                               "contain")
        problem = _type_problem(values[path], declared)
        if problem is not None:
            raise ArchiveError(f"{where}: prim::GetAttr{_at(node)} reads '{path}' as {declared}, but {problem}")


def _type_problem(value, declared: Type) -> str | None:
    """Why `value` does not have the IR type `declared`, or None."""
    if isinstance(declared, OptionalType):
        return None if value is None else _type_problem(value, declared.elem)
    if isinstance(declared, TensorType):
        if not isinstance(value, np.ndarray):
            return f"it holds a {type(value).__name__}"
        described = f"it is {value.dtype.name} {list(value.shape)}"
        if declared.dtype is not None and declared.dtype.np != value.dtype:
            return described
        if declared.shape is not None and (len(declared.shape) != value.ndim or any(
                isinstance(d, int) and d != n for d, n in zip(declared.shape, value.shape))):
            return described
        return None
    allowed = _SCALARS.get(declared)
    if allowed is not None and (not isinstance(value, allowed) or (declared is not Bool and isinstance(value, bool))):
        return f"it holds {value!r}"
    return None


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
