"""The reference interpreter: runs any Graph node by node with the op table's kernels on numpy arrays.

It is the oracle every pass and code generator is tested against, so it is
small and direct: one method per prim:: op, `run_kernel` for everything else.
A FusionGroup runs its subgraph, which is its unfused meaning.

Its public interface is what the compiled executor builds on: `run_block(block,
env)` runs a block's nodes over an environment of values (by id of the IR
Value) and returns what the block returns; `run_node(node, env)` runs one node
and returns its outputs. Subclasses may override either to watch a run.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from scriptc import ops
from scriptc.errors import JitError
from scriptc.ir.graph import Block, Graph, Node
from scriptc.ops.dicts import key_of
from scriptc.ops.execute import run_kernel
from scriptc.types import ListType, TensorType

from . import parallel
from .objects import ScriptObject
from .script_traceback import add_frame, close_function
from .values import value_has_type


class ModuleValue:
    """A module at run time: attributes (arrays, numbers, submodules) by name, for prim::GetAttr."""

    __slots__ = ("attributes", "path")

    def __init__(self, attributes: Mapping[str, Any], path: str = ""):
        self.attributes = attributes
        self.path = path

    def get(self, name: str):
        try:
            return self.attributes[name]
        except KeyError:
            where = self.path or "the module"
            raise AttributeError(f"{where} has no attribute '{name}'") from None

    def set(self, name: str, value) -> None:
        self.attributes[name] = value

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> "ModuleValue":
        """Build the nested form from dotted names ({'fc1.weight': w} -> self.fc1.weight); a
        ValueError where a name is both a value and a module. Iterative: names may have many dots."""
        root: dict[str, Any] = {}
        modules: list[tuple[str, dict]] = [("", root)]  # each module's path and attributes, parents first
        module_ids = {id(root)}  # a dict here is a module's attributes, unless it is an attribute's value
        for key, value in flat.items():
            *owners, last = key.split(".")
            attributes, path = root, ""
            for part in owners:
                path = f"{path}.{part}" if path else part
                child = attributes.get(part)
                if child is None:
                    child = attributes[part] = {}
                    modules.append((path, child))
                    module_ids.add(id(child))
                elif id(child) not in module_ids:
                    raise ValueError(f"'{path}' is both a value and a module")
                attributes = child
            if id(attributes.get(last)) in module_ids:
                raise ValueError(f"'{key}' is both a value and a module")
            attributes[last] = value
        built: dict[int, ModuleValue] = {}
        for path, attributes in reversed(modules):  # children before their parents
            built[id(attributes)] = cls({k: built[id(v)] if id(v) in module_ids else v for k, v in attributes.items()},
                                        path)
        return built[id(root)]


class Interpreter:
    """Runs `graph` on a list of input values; `functions` resolves prim::Call targets by name."""

    def __init__(self, graph: Graph, functions: Mapping[str, Graph] | None = None):
        self.graph = graph
        self.functions = dict(functions or {})
        self._prims: dict[str, Callable] = {
            "prim::Constant": self._constant, "prim::GetAttr": self._get_attr, "prim::If": self._if,
            "prim::Loop": self._loop, "prim::TupleConstruct": self._tuple, "prim::TupleUnpack": self._unpack,
            "prim::ListUnpack": self._unpack, "prim::TupleIndex": self._tuple_index,
            "prim::ListConstruct": self._list, "prim::DictConstruct": self._dict,
            "prim::FusionGroup": self._fusion_group, "prim::Call": self._call,
            "prim::RaiseException": self._raise, "prim::Uninitialized": self._uninitialized,
            "prim::IsNone": self._is_none, "prim::Refine": self._refine, "prim::SetAttr": self._set_attr,
            "prim::CreateObject": self._create_object, "prim::isinstance": self._isinstance,
            "prim::Fork": self._fork, "prim::Wait": self._wait, "prim::With": self._with,
        }

    def run(self, inputs: list) -> list:
        if len(inputs) != len(self.graph.inputs):
            raise TypeError(f"{self.graph.name}() expects {len(self.graph.inputs)} inputs, got {len(inputs)}")
        env: dict[int, Any] = {id(p): v for p, v in zip(self.graph.inputs, inputs)}
        try:
            return self.run_block(self.graph.block, env)
        except Exception as exc:
            close_function(exc)
            raise

    __call__ = run

    def run_block(self, block: Block, env: dict) -> list:
        """Run the block's nodes, binding their outputs in `env`; the values the block returns."""
        for node in block:
            try:
                values = self.run_node(node, env)
            except Exception as exc:
                error = add_frame(exc, node, self.graph.name)
                if error is exc:
                    raise
                raise error from None
            for out, value in zip(node.outputs, values):
                env[id(out)] = value
        return [env[id(v)] for v in block.returns]

    def run_node(self, node: Node, env: dict) -> list:
        """The outputs of one node whose inputs are bound in `env` (nested blocks bind theirs there too)."""
        prim = self._prims.get(node.op)
        if prim is not None:
            return prim(node, env)
        return self._op(node, [env[id(v)] for v in node.inputs])

    def _op(self, node: Node, args: list) -> list:
        op = ops.OPS[node.op]
        target = args[0] if args else None  # (run_kernel may replace args' arrays by promoted copies)
        out = run_kernel(op, np, args)
        if op.aux:
            out = out[0]
        if op.inplace_of is not None:
            np.copyto(target, out, casting="same_kind")
            out = target
        if len(node.outputs) == 1:
            kind = node.outputs[0].type
            if isinstance(kind, TensorType) and not isinstance(out, np.ndarray):  # (a QuantizedArray stays one)
                out = np.asarray(out)
            return [list(out) if isinstance(out, tuple) and isinstance(kind, ListType) else out]
        return [np.asarray(o) if type(o) is not np.ndarray else o for o in out]

    def _constant(self, node: Node, env: dict) -> list:
        return [node.attrs["value"]]

    def _get_attr(self, node: Node, env: dict) -> list:
        return [env[id(node.inputs[0])].get(node.attrs["name"])]

    def _if(self, node: Node, env: dict) -> list:
        cond = env[id(node.inputs[0])]
        return self.run_block(node.blocks[0] if bool(cond) else node.blocks[1], env)

    def _with(self, node: Node, env: dict) -> list:
        return run_guarded(lambda: self.run_block(node.blocks[0], env), lambda: self.run_block(node.blocks[1], env))

    def _loop(self, node: Node, env: dict) -> list:
        max_trip = int(env[id(node.inputs[0])])
        cond = bool(env[id(node.inputs[1])])
        carried = [env[id(v)] for v in node.inputs[2:]]
        body = node.blocks[0]
        i = 0
        while i < max_trip and cond:
            env[id(body.params[0])] = i
            for p, v in zip(body.params[1:], carried):
                env[id(p)] = v
            results = self.run_block(body, env)
            cond, carried = bool(results[0]), results[1:]
            i += 1
        return carried

    def _tuple(self, node: Node, env: dict) -> list:
        return [tuple(env[id(v)] for v in node.inputs)]

    def _list(self, node: Node, env: dict) -> list:
        return [[env[id(v)] for v in node.inputs]]

    def _dict(self, node: Node, env: dict) -> list:
        items = [env[id(v)] for v in node.inputs]
        return [{key_of(k): v for k, v in zip(items[0::2], items[1::2])}]

    def _unpack(self, node: Node, env: dict) -> list:
        value = env[id(node.inputs[0])]
        if len(value) != len(node.outputs):
            raise ValueError(f"cannot unpack {len(value)} values into {len(node.outputs)}")
        return list(value)

    def _tuple_index(self, node: Node, env: dict) -> list:
        return [env[id(node.inputs[0])][node.attrs["index"]]]

    def _fusion_group(self, node: Node, env: dict) -> list:
        body = node.blocks[0]
        for p, v in zip(body.params, node.inputs):
            env[id(p)] = env[id(v)]
        return self.run_block(body, env)

    def _call(self, node: Node, env: dict) -> list:
        return self._callee(node)(*[env[id(v)] for v in node.inputs])

    def _callee(self, node: Node):
        name = node.attrs["function"]
        target = self.functions.get(name)
        if target is None:
            raise RuntimeError(f"prim::Call to unknown function '{name}'")
        if not isinstance(target, Graph):
            return target  # a Python function left out of the script (@jit.ignore)
        return lambda *args: type(self)(target, self.functions).run(list(args))

    def _fork(self, node: Node, env: dict) -> list:
        callee = self._callee(node)
        return [parallel.fork(callee, *[env[id(v)] for v in node.inputs])]

    def _wait(self, node: Node, env: dict) -> list:
        return [env[id(node.inputs[0])].wait()[0]]

    def _set_attr(self, node: Node, env: dict) -> list:
        env[id(node.inputs[0])].set(node.attrs["name"], env[id(node.inputs[1])])
        return []

    def _create_object(self, node: Node, env: dict) -> list:
        return [ScriptObject(node.attrs["class"])]

    def _isinstance(self, node: Node, env: dict) -> list:
        value = env[id(node.inputs[0])]
        return [any(value_has_type(value, t) for t in node.attrs["types"])]

    def _raise(self, node: Node, env: dict) -> list:
        raise JitError(node.attrs["message"] + "".join(env[id(text)] for text in node.inputs))

    def _uninitialized(self, node: Node, env: dict) -> list:
        return [None]

    def _is_none(self, node: Node, env: dict) -> list:
        return [env[id(node.inputs[0])] is None]

    def _refine(self, node: Node, env: dict) -> list:
        return [env[id(node.inputs[0])]]


def run_guarded(body: Callable[[], list], exit_block: Callable[[], object]) -> list:
    """A prim::With: the body's results, the exit block run after it. When the body raises, the exit
    block still runs and the body's exception goes on (what the exit block raises then is dropped, as
    torch's interpreter drops it)."""
    try:
        results = body()
    except BaseException:
        try:
            exit_block()
        except Exception:
            pass
        raise
    exit_block()
    return results
