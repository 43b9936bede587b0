"""Which dims of a trace's inputs are dynamic, found by following probe sizes.

jit.trace sees one size per dim, and the graph it records generalizes over a dim only where
nothing it baked in depends on that dim. Each dim k of the tensor inputs is a candidate, one per
(position, size) pair (dim k of every input that has that size there moves with it: a mask beside
its sequence), and the tracer follows each candidate at two probe sizes besides the observed one -
a "world" per (candidate, probe).
In each world, a recorded value's shape comes from its op's shape rule, and a size read from a
tensor carries its value there through the arithmetic done on it (`x.size(0) * x.size(1)`).

A candidate is dropped when one of its worlds changes what the trace baked in: a list op splits
into another number of parts (an unbind over the sequence), a Python loop reads each index of a
dim, a rule fails or gives another rank, a comparison of sizes comes out otherwise. Every candidate
left is a dynamic dim with a symbol of its own: the batch ("B") is the one most inputs share (the
first such), the others are "S1", "S2", ... (a CNN's height and width, a transformer's sequence).
A recorded dim whose sizes in one candidate's worlds are that candidate's probes, and that stays
put in every other's, is that symbol; one that stays put in all worlds is concrete; one that moves
otherwise (the 35*B rows of a reshape, the H*W of a flatten) is unknown (None), so no pass
specializes on its observed size. A scripted call's result is followed by running the call again
at each world's sizes (call_shapes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from scriptc.ir.graph import walk
from scriptc.ops import OPS
from scriptc.ops.generator import default_generator
from scriptc.ops.rules import Unknown
from scriptc.passes.analysis import mutated_values
from scriptc.runtime.input_dims import BakedDim
from scriptc.tensors import Tensor, wrap
from scriptc.types import Bool, Float, Int, ListType, TensorType

BATCH = "B"
OTHER_SYMBOL = "S{}"  # the dynamic dims after the batch: S1, S2, ...
# A candidate of observed size n is followed at 2n and 3n (1 and 2 for n = 0): sizes that keep what
# n divides by, so that a U-Net traced at 64x64 (four poolings, then skip connections) or a model
# halving its sequence (`x[:, :n // 2]`) stays dynamic where eager code would run, while a size
# the code compares against (`if x.size(1) == 16`) or bakes in (a split into n parts) drops it.
PROBE_FACTORS = (2, 3)


@dataclass(eq=False)
class Candidate:
    """Dim `dim` of the inputs whose size there is `size`, while `alive` (nothing baked it in);
    `baked` says what did, where the trace bakes a decision in (a split's count, a comparison),
    rather than an op that fails at other sizes as eager code would."""
    dim: int
    size: int
    alive: bool = True
    baked: str | None = None
    inputs: int = 0  # how many of the tensor inputs it marks

    def drop(self, baked: str | None) -> None:
        if self.alive:
            self.alive, self.baked = False, baked

    def marks(self, shape: tuple) -> bool:
        return len(shape) > self.dim and shape[self.dim] == self.size


@dataclass
class TraceDims:
    """The candidates of one trace and every value's shape in their worlds.

    `shapes` maps id(Value) to one entry per world: a shape (dims int, or None where the size moves
    in a way not followed) or None where the whole shape is unknown. A value without an entry has
    its observed shape in every world; a TracedInt carries its sizes per world the same way."""
    values: dict  # the tracer's id(tensor) -> Value
    locate: Callable[[], object] = lambda: None  # the user's source line being traced
    candidates: list[Candidate] = field(default_factory=list)
    worlds: list[tuple[Candidate, int]] = field(default_factory=list)
    shapes: dict[int, tuple] = field(default_factory=dict)
    selected: dict[tuple, set] = field(default_factory=dict)  # (id(Value), dim) -> indices read by select

    # --- inputs ----------------------------------------------------------------------------
    def add_candidates(self, shapes: list[tuple]) -> None:
        """One candidate per (dim, size) pair of the example inputs' shapes, in their order."""
        for shape in shapes:
            for k, n in enumerate(shape):
                if not any(c.dim == k and c.size == n for c in self.candidates):
                    self.candidates.append(Candidate(k, n))
        for candidate in self.candidates:
            candidate.inputs = sum(candidate.marks(shape) for shape in shapes)
        self.worlds = [(c, c.size * factor if c.size else factor - 1)
                       for c in self.candidates for factor in PROBE_FACTORS]

    def input_shapes(self, shape: tuple) -> tuple | None:
        """An input's shape in each world (None: the same in all)."""
        if not any(c.marks(shape) for c in self.candidates):
            return None
        return tuple(tuple(probe if c.marks(shape) and i == c.dim else d for i, d in enumerate(shape))
                     for c, probe in self.worlds)

    def bind(self, value, shapes: tuple | None) -> None:
        if shapes is not None:
            self.shapes[id(value)] = shapes

    def size_shadows(self, value, dim: int) -> tuple | None:
        """The size of `value`'s dim in each world (None where unknown), or None: the same in all."""
        shapes = self.shapes.get(id(value))
        if shapes is None:
            return None
        return tuple(None if s is None else s[dim] for s in shapes)

    # --- size arithmetic ---------------------------------------------------------------------
    @staticmethod
    def combine(fn, a: int, a_shadows, b: int, b_shadows) -> tuple | None:
        """fn(a, b) in each world, from each side's sizes there (None where either is unknown)."""
        if a_shadows is None and b_shadows is None:
            return None
        count = len(a_shadows if a_shadows is not None else b_shadows)
        out = []
        for w in range(count):
            x = a if a_shadows is None else a_shadows[w]
            y = b if b_shadows is None else b_shadows[w]
            try:
                out.append(None if x is None or y is None else fn(x, y))
            except ArithmeticError:
                out.append(None)
        return tuple(out)

    def check_same(self, result, shadows: tuple | None) -> None:
        """A Python value computed from sizes (a comparison) is baked in: drop the candidates of the
        worlds where it comes out otherwise."""
        if shadows is None:
            return
        for (candidate, _), seen in zip(self.worlds, shadows):
            if candidate.alive and seen is not None and seen != result:
                candidate.drop(self._at("a comparison of sizes"))

    # --- ops -----------------------------------------------------------------------------
    def shadows(self, arg) -> tuple | None:
        """A traced tensor's shapes or a traced size's values per world (None: as observed in all)."""
        if isinstance(arg, Tensor):
            value = self.values.get(id(arg))
            return None if value is None else self.shapes.get(id(value))
        return getattr(arg, "_shadows", None) if isinstance(arg, int) else None

    def record(self, op, args: tuple, outs: tuple, out_values: list) -> None:
        """The outputs' shapes in each world where an input moves: from the op's shape rule there. A
        world where the rule fails, or gives another number of outputs (a split's parts) or another
        rank, drops its candidate - unless the rule cannot say at the observed sizes either."""
        if not any(self._moves(a) for a in args):
            return
        if op.name == "select":
            self._note_select(*args[:3])
        per_world, informative = [], None
        for w, (candidate, _) in enumerate(self.worlds):
            exact = [True]
            metas = [self._meta(a, w, exact) for a in args]
            shapes = None
            if candidate.alive and exact[0]:
                shapes = self._infer(op, metas, outs)
                if not isinstance(shapes, list):
                    if informative is None:
                        observed = [self._meta(a, None, [True]) for a in args]
                        informative = isinstance(self._infer(op, observed, outs), list)
                    if informative:
                        candidate.drop(None if shapes is None else self._at(f"{op.name}, {shapes}"))
                    shapes = None
            per_world.append(shapes)
        for k, value in enumerate(out_values):
            self.shapes[id(value)] = tuple(None if shapes is None else shapes[k] for shapes in per_world)

    def call_shapes(self, run, args: list, out, graphs: list):
        """Each tensor of a scripted call's result (in order) with its shape per world, or None where
        no argument moves: the call run again untraced on zeros of each world's sizes (a traced LSTM
        layer's loop), unless its code reads a tensor's data as a Python value (a packed batch's
        lengths: zeros would answer otherwise), writes a tensor or sets an attribute (the default
        generator's stream is put back after). Unknown in a world where it cannot run or gives
        another rank."""
        if not any(self._moves(a) for a in args):
            return None
        tensors = _tensors_in(out)
        bits = default_generator.rng.bit_generator
        stream = bits.state
        replay = _replayable(graphs)
        try:
            per_world = [self._world_call(run, args, tensors, w) if replay and candidate.alive else None
                         for w, (candidate, _) in enumerate(self.worlds)]
        finally:
            bits.state = stream
        return iter([tuple(None if s is None else s[k] for s in per_world) for k in range(len(tensors))])

    def _world_call(self, run, args: list, tensors: list, w: int) -> list | None:
        world_args = self._world_arg(args, w)
        try:
            result = None if world_args is None else _tensors_in(run(world_args))
        except Exception:  # noqa: BLE001 - the call fails at these sizes: nothing known there
            return None
        if result is None or len(result) != len(tensors):
            return None
        return [tuple(r._data.shape) if r._data.ndim == t._data.ndim else None for r, t in zip(result, tensors)]

    def _world_arg(self, arg, w: int):
        """`arg` as world `w` has it (zeros of its shape there for a tensor that moves), or None where
        a size there is unknown."""
        if isinstance(arg, (list, tuple)):
            items = [self._world_arg(a, w) for a in arg]
            return None if any(i is None and a is not None for i, a in zip(items, arg)) else type(arg)(items)
        shadows = self.shadows(arg)
        if shadows is None:
            return arg
        if isinstance(arg, Tensor):
            shape = shadows[w]
            return None if shape is None or None in shape else wrap(np.zeros(shape, dtype=arg._data.dtype))
        return shadows[w]

    def _note_select(self, x: Tensor, dim: int, index) -> None:
        """`x[i]` at every index of a dim that moves is a Python loop over it (`for t in
        range(x.size(0))`, which hands the tracer plain ints): its count is baked in, as a split's."""
        shapes = self.shadows(x)
        if shapes is None or not isinstance(index, int) or getattr(index, "_shadows", None) is not None:
            return
        dim = dim % x.dim()
        size = x._data.shape[dim]
        seen = self.selected.setdefault((id(self.values[id(x)]), dim), set())
        seen.add(index % size)
        if size < 2 or len(seen) < size:
            return
        for (candidate, _), shape in zip(self.worlds, shapes):
            if shape is not None and shape[dim] != size:
                candidate.drop(self._at(f"x[i] at each of its {size} indices, as a Python loop over the dim reads it"))

    def _moves(self, arg) -> bool:
        if isinstance(arg, (list, tuple)):
            return any(self._moves(a) for a in arg)
        return self.shadows(arg) is not None

    def _meta(self, arg, w: int | None, exact: list):
        """What the shape rule sees for `arg` in world `w` (None: as observed); exact[0] turns False
        where a size is unknown there."""
        if isinstance(arg, (list, tuple)):
            return [self._meta(a, w, exact) for a in arg]
        shadows = None if w is None else self.shadows(arg)
        if isinstance(arg, Tensor):
            shape = tuple(arg._data.shape) if shadows is None else shadows[w]
            if shape is None or None in shape:
                exact[0] = False
            return TensorType(arg.dtype, shape)
        if shadows is not None:
            if shadows[w] is None:
                exact[0] = False
                return Unknown(Int)
            return shadows[w]
        return int(arg) if isinstance(arg, int) and not isinstance(arg, bool) else arg

    def _at(self, what: str) -> str:
        where = self.locate()
        return what if where is None else f"{what} at {where}"

    @staticmethod
    def _infer(op, metas: list, outs: tuple) -> list | str | None:
        """Per output its shape by the op's rule at these exact sizes (None for a dim the rule cannot
        say: it depends on data - nonzero, or an interpolation to a size computed as a tensor from the
        input's sizes - which may move with them); None where the rule fails, or what differs where it
        gives another number of outputs or another rank than the trace saw."""
        try:
            inferred = op.shape(*metas)
        except Exception:  # noqa: BLE001 - the op would fail at these sizes
            return None
        inferred = [inferred] if isinstance(inferred, TensorType) else list(inferred) \
            if isinstance(inferred, (tuple, list)) else []
        if not all(isinstance(t, TensorType) for t in inferred):
            return None
        if len(inferred) != len(outs):
            return f"whose {len(outs)} results the trace unpacked"
        shapes = []
        for t, out in zip(inferred, outs):
            actual = tuple(out._data.shape)
            if t.shape is None:
                shapes.append(None)
            elif len(t.shape) != len(actual):
                return f"whose result's rank {len(actual)} the trace kept"
            else:
                shapes.append(tuple(d if isinstance(d, int) else None for d in t.shape))
        return shapes

    # --- the result ----------------------------------------------------------------------------
    @property
    def dynamic(self) -> list[Candidate]:
        """The candidates the graph is dynamic in (those no world dropped), the batch first: the one
        most inputs share (a sequence-first model's batch beside its initial state's, not its steps),
        the earliest of those."""
        alive = [c for c in self.candidates if c.alive]
        return sorted(alive, key=lambda c: -c.inputs)

    def symbol(self, candidate: Candidate) -> str:
        index = self.dynamic.index(candidate)
        return BATCH if index == 0 else OTHER_SYMBOL.format(index)

    def final_shape(self, value, actual: tuple) -> tuple:
        """`value`'s dims for the graph: a dynamic candidate's symbol where they are that candidate,
        None where they move with the candidates otherwise, the observed size where they do not move."""
        shapes = self.shapes.get(id(value))
        if shapes is None or not self.dynamic:
            return actual
        dims = []
        for i, a in enumerate(actual):
            follows = []  # the dynamic candidates in whose worlds dim i moves, and whether as their probes
            for candidate in self.dynamic:
                seen = [(None if s is None else s[i], probe)
                        for s, (c, probe) in zip(shapes, self.worlds) if c is candidate]
                if not all(d == a for d, _ in seen):
                    follows.append((candidate, a == candidate.size and all(d == probe for d, probe in seen)))
            if not follows:
                dims.append(a)
            elif len(follows) == 1 and follows[0][1]:
                dims.append(self.symbol(follows[0][0]))
            else:
                dims.append(None)
        return tuple(dims)

    def input_shape(self, shape: tuple) -> tuple:
        """An input's dims for the graph: a dynamic candidate's symbol where it marks the input."""
        symbols = {c.dim: self.symbol(c) for c in self.dynamic if c.marks(shape)}
        return tuple(symbols.get(i, d) for i, d in enumerate(shape))

    def baked_dims(self, examples: tuple) -> list[BakedDim]:
        """The dims of the top-level tensor inputs that the trace baked in (not dynamic because a
        decision it recorded depends on them), with what baked each in."""
        baked = []
        for position, example in enumerate(examples):
            shape = tuple(example._data.shape) if isinstance(example, Tensor) else ()
            for dim, size in enumerate(shape):
                if any(c.alive and c.dim == dim and c.size == size for c in self.candidates):
                    continue
                why = next((c.baked for c in self.candidates if c.baked and c.dim == dim and c.size == size), None)
                if why is not None:
                    baked.append(BakedDim(position, dim, size, why))
        return baked


def _tensors_in(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    return []


def _replayable(graphs: list) -> bool:
    """Whether running these graphs again on zeros tells the shapes they give at those sizes and
    changes no state a later call sees (apart from the random numbers drawn): no tensor's data read
    as a Python value (`batch_sizes.tolist()`, `int(x[0])`, `bool(x.sum() > 1)`), no tensor written
    in place, no attribute set."""
    for graph in graphs:
        for node in walk(graph.block):
            if node.op == "prim::SetAttr":
                return False
            if OPS.get(node.op) is None or node.op in _SIZE_READERS:
                continue
            if any(isinstance(v.type, TensorType) for v in mutated_values(node)):
                return False
            if any(isinstance(v.type, TensorType) for v in node.inputs) and any(
                    _is_python_value(v.type) for v in node.outputs):
                return False
    return True


_SIZE_READERS = frozenset({"size", "size.all", "dim", "numel"})


def _is_python_value(t) -> bool:
    return t in (Int, Float, Bool) or isinstance(t, ListType) and t.elem in (Int, Float, Bool)
