"""The trace check: jit.trace runs the traced graph again on its examples and compares the results
with what the eager code returned."""

from __future__ import annotations

import warnings

import numpy as np

from scriptc import ops
from scriptc.errors import TracerWarning
from scriptc.ir.graph import Graph, Node
from scriptc.ops import bfloat16
from scriptc.tensors import Tensor


class TracingCheckError(RuntimeError):
    """check_trace found the traced graph computing something other than the eager code."""


def _flatten(value) -> list:
    if isinstance(value, Tensor):
        # numpy cannot compare bfloat16's bit patterns: compare their float32 values
        return [bfloat16.to_float32(np, value._data) if bfloat16.holds(value._data) else value._data]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flatten(v)]
    return [np.asarray(value)]


def nondeterministic_nodes(graph: Graph) -> list[Node]:
    """The nodes that draw random numbers (dropout only when training with p > 0)."""
    found = []
    for node in graph.nodes():
        op = ops.OPS.get(node.op)
        if op is None or op.kind != ops.RANDOM:
            continue
        if node.op == "dropout" and any(
                v.node.op == "prim::Constant" and v.node.attrs.get("value") in (0, 0.0, False) for v in node.inputs[1:]):
            continue
        found.append(node)
    return found


def _scale(expected: np.ndarray) -> float:
    """The largest finite magnitude of an output, at least 1: the replay runs the graph's ops, not the
    eager calls, so a long float32 computation (RAFT's refinement loop) may end a few ulps of its
    largest values away; the check's absolute tolerance scales with them."""
    finite = np.abs(expected[np.isfinite(expected)]) if expected.dtype.kind in "fc" else np.abs(expected)
    return max(1.0, float(finite.max())) if finite.size else 1.0


def check_trace_replay(traced, graph: Graph, examples, eager_out, tolerance: float) -> None:
    """Re-run the trace (`traced`, a callable running `graph`) on its examples: a mismatch is a
    TracingCheckError, or only TracerWarnings (as torch gives) when the graph draws random numbers,
    since then every call draws anew."""
    from scriptc.autograd import no_grad

    with no_grad():
        replay = traced(*examples)
    random_nodes = None
    for i, (a, b) in enumerate(zip(_flatten(replay), _flatten(eager_out))):
        if a.shape != b.shape or not np.allclose(a, b, rtol=tolerance, atol=tolerance * _scale(b), equal_nan=True):
            if random_nodes is None:
                random_nodes = nondeterministic_nodes(graph)
                if random_nodes:
                    ops_drawn = {f" = {n.op}(" for n in random_nodes}
                    lines = [line.strip() for line in str(graph).splitlines()
                             if any(text in line for text in ops_drawn)]
                    nodes = "\n".join("\t" + line for line in lines[:20])
                    warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your model? "
                                  f"Nodes:\n{nodes}\nThis may cause errors in trace checking. To disable trace "
                                  "checking, pass check_trace=False to torch.jit.trace()", TracerWarning, stacklevel=3)
            if random_nodes:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the corresponding output "
                              "of the Python function.", TracerWarning, stacklevel=3)
                continue
            raise TracingCheckError(
                f"Tracer check failed: output {i} of the traced graph differs from the eager code (max difference "
                f"{np.max(np.abs(a.astype(np.float64) - b)) if a.shape == b.shape else 'shape ' + str(a.shape)}). "
                "The code probably depends on tensor values or randomness; pass check_trace=False to keep the trace.")
