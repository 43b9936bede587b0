"""Scripted methods specialized for their example inputs (jit.script's `example_inputs`).

A scripted graph's tensor inputs have no dtype or shape, so shape inference learns nothing and no
pointwise chain can fuse. `jit.script(fn, example_inputs=[(x,)])` records, per tensor input, the
example's dtype and its shape with the first (batch) dim left open. A method then has two plans:
one optimized for inputs like the examples (dim() and the known size(d) folded, chains fused and
compiled when it is built) and the generic one, which any other call runs - a different dtype,
rank or feature size - as TorchScript would run it. The archive keeps the specs in the method's
signature as "specialize": [{"dtype": "float32", "shape": [null, 784]} or null per input].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriptc.ir.graph import Graph
from scriptc.types import ALL_DTYPES, TensorType

_DTYPES = {d.name: d for d in ALL_DTYPES}
# An open first dim is the batch, named as jit.trace names it: shape inference follows it into the
# outputs, where the server reads which of them can be stacked and split along it.
BATCH = "B"


@dataclass(frozen=True)
class InputSpec:
    """A tensor input's dtype and shape (None: any size)."""
    dtype: str
    shape: tuple

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "shape": list(self.shape)}

    @staticmethod
    def from_json(value) -> "InputSpec | None":
        """The spec a signature's "specialize" entry describes; ValueError naming what is wrong."""
        if value is None:
            return None
        if not isinstance(value, dict) or value.get("dtype") not in _DTYPES or not isinstance(value.get("shape"), list):
            raise ValueError(f"expected null or {{\"dtype\": <dtype name>, \"shape\": [...]}}, got {value!r}")
        shape = value["shape"]
        if not all(d is None or (type(d) is int and d >= 0) for d in shape):
            raise ValueError(f"shape dims must be non-negative ints or null, got {shape!r}")
        return InputSpec(value["dtype"], tuple(shape))


def specialized_graph(graph: Graph, specs: list, skip: int = 0) -> Graph:
    """A copy of `graph` whose tensor inputs after the first `skip` (a module's self) have the specs'
    types; the optimization pipeline infers the rest from them."""
    out = graph.copy()
    for value, spec in zip(out.inputs[skip:], specs):
        if spec is not None:
            shape = tuple(BATCH if d is None and i == 0 else d for i, d in enumerate(spec.shape))
            value.type = TensorType(_DTYPES[spec.dtype], shape, getattr(value.type, "device", "cpu"))
    return out


class Specialized:
    """Runs `special` for inputs that match `specs` (after the first `skip`), else `generic`."""

    def __init__(self, generic, special, specs: list, skip: int = 0):
        self.generic, self.special = generic, special
        # (input position, dtype, rank, (dim, size) pairs to compare); numpy dtypes compare in 0.1 us
        self.checks = [(skip + i, np.dtype(spec.dtype), len(spec.shape),
                        [(d, n) for d, n in enumerate(spec.shape) if n is not None])
                       for i, spec in enumerate(specs) if spec is not None]

    @property
    def compiled_groups(self) -> int:
        return sum(getattr(r, "compiled_groups", 0) for r in (self.generic, self.special))

    def prepare_threads(self, count: int) -> None:
        for runner in (self.generic, self.special):
            if hasattr(runner, "prepare_threads"):
                runner.prepare_threads(count)

    def run(self, inputs: list) -> list:
        for i, dtype, rank, sizes in self.checks:
            value = inputs[i] if i < len(inputs) else None
            if type(value) is not np.ndarray or value.dtype != dtype or value.ndim != rank or \
                    any(value.shape[d] != n for d, n in sizes):
                return self.generic.run(inputs)
        return self.special.run(inputs)

    __call__ = run
