"""Running a scripted graph on Tensors, with autograd: what a ScriptFunction or ScriptModule does when
gradients are wanted (an input or parameter requires grad, or the graph reads autograd state -
x.grad, x.requires_grad, torch.autograd.grad).

The reference interpreter (runtime/interpreter.py) computes on numpy arrays and knows nothing of
autograd (the deployment runtime has none); this subclass runs each tensor op through eager
dispatch instead, so the graph's ops are recorded on the tape as eager code's are.
"""

from __future__ import annotations

import numpy as np

from scriptc import ops
from scriptc.ir.graph import Node, walk
from scriptc.runtime.interpreter import Interpreter
from scriptc.tensors import Tensor, call, call_inplace, wrap
from scriptc.types import TensorType

# The SCALAR ops that read autograd state, so they are given Tensors, not their arrays.
_READS_AUTOGRAD = frozenset({"grad.autograd", "requires_grad.tensor", "grad.tensor", "is_leaf.tensor",
                             "retains_grad.tensor"})


def reads_autograd(graphs) -> bool:
    """Whether any of the graphs reads autograd state (and so must run on Tensors)."""
    return any(node.op in _READS_AUTOGRAD for graph in graphs if hasattr(graph, "block")
               for node in walk(graph.block))


def _array(value):
    return value._data if isinstance(value, Tensor) else value


def _tensors(value):
    """A kernel's result with its arrays as Tensors; a list or tuple holding none stays itself (a list
    read from a dict or list is that list: appending to it changes the container)."""
    if isinstance(value, np.ndarray):
        return wrap(value)
    if isinstance(value, (list, tuple)):
        converted = [_tensors(v) for v in value]
        if all(c is v for c, v in zip(converted, value)):
            return value
        return converted if isinstance(value, list) else tuple(converted)
    return value


class EagerInterpreter(Interpreter):
    """The reference interpreter with tensor ops dispatched eagerly (recorded for backward)."""

    def _op(self, node: Node, args: list) -> list:
        op = ops.OPS[node.op]
        if node.op == "number.tensor" and isinstance(args[0], Tensor) and args[0].requires_grad:
            # (TorchScript's implicit tensor-to-number conversion would cut the tensor's gradient)
            raise RuntimeError("Cannot input a tensor that requires grad as a scalar argument")
        if op.kind == ops.SCALAR:
            # Tensor arguments are handed to the kernel as their arrays; lists, dicts and tuples (and
            # everything a list/dict op stores) as they are, so a list op mutates the list itself and
            # an element read keeps its autograd history
            keep = node.op in _READS_AUTOGRAD or op.mutates
            out = op.kernel(np, *(args if keep else [_array(a) for a in args]))
            if len(node.outputs) == 1 and isinstance(node.outputs[0].type, TensorType):
                out = wrap(np.asarray(out)) if not isinstance(out, Tensor) else out
                if "requires_grad" in op.arg_index and args[op.arg_index["requires_grad"]]:
                    out.requires_grad_(True)
                return [out]
            return [_tensors(out)] if len(node.outputs) == 1 else list(_tensors(out))
        out = call_inplace(op, tuple(args)) if op.inplace_of is not None else call(op, tuple(args))
        if len(node.outputs) == 1:
            return [out]
        return list(out)

    def _constant(self, node: Node, env: dict) -> list:
        value = node.attrs["value"]
        return [wrap(value) if isinstance(value, np.ndarray) else value]

    def _call(self, node: Node, env: dict) -> list:
        return [_tensors(v) for v in self._callee(node)(*[env[id(v)] for v in node.inputs])]
