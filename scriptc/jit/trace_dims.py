"""Which dim of a trace's inputs is its dynamic batch, found by following probe sizes.

jit.trace sees one size per dim, and the graph it records generalizes over a dim only where
nothing it baked in depends on that dim. Each dim k of the first tensor input is a candidate
(together with dim k of every other input that has the same size there), and the tracer follows
each candidate at two probe sizes besides the observed one - a "world" per (candidate, probe).
In each world, a recorded value's shape comes from its op's shape rule, and a size read from a
tensor carries its value there through the arithmetic done on it (`x.size(0) * x.size(1)`).

A candidate is dropped when one of its worlds changes what the trace baked in: a list op splits
into another number of parts (a sequence-first LSTM's steps, when the candidate is the sequence),
a rule fails or gives another rank, a comparison of sizes comes out otherwise. The batch is the
first candidate left. A dim whose sizes in the batch's worlds are the probes themselves is the
batch ("B"); one that stays put is concrete; one that moves otherwise (the 35*B rows of a reshape)
is unknown (None), so no pass specializes on its observed size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scriptc.ops.rules import Unknown
from scriptc.tensors import Tensor
from scriptc.types import Int, TensorType

BATCH = "B"
PROBE_STEPS = (1, 2)  # a candidate of observed size n is followed at n + 1 and n + 2


@dataclass(eq=False)
class Candidate:
    """Dim `dim` of the inputs whose size there is `size`, while `alive` (nothing baked it in)."""
    dim: int
    size: int
    alive: bool = True

    def marks(self, shape: tuple) -> bool:
        return len(shape) > self.dim and shape[self.dim] == self.size


@dataclass
class TraceDims:
    """The candidates of one trace and every value's shape in their worlds.

    `shapes` maps id(Value) to one entry per world: a shape (dims int, or None where the size moves
    in a way not followed) or None where the whole shape is unknown. A value without an entry has
    its observed shape in every world; a TracedInt carries its sizes per world the same way."""
    values: dict  # the tracer's id(tensor) -> Value
    candidates: list[Candidate] = field(default_factory=list)
    worlds: list[tuple[Candidate, int]] = field(default_factory=list)
    shapes: dict[int, tuple] = field(default_factory=dict)

    # --- inputs ----------------------------------------------------------------------------
    def input_shapes(self, shape: tuple) -> tuple | None:
        """An input's shape in each world (the first tensor input with dims makes the candidates)."""
        if not self.candidates and shape:
            self.candidates = [Candidate(k, n) for k, n in enumerate(shape)]
            self.worlds = [(c, c.size + step) for c in self.candidates for step in PROBE_STEPS]
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
                candidate.alive = False

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
        per_world, informative = [], None
        for w, (candidate, _) in enumerate(self.worlds):
            exact = [True]
            metas = [self._meta(a, w, exact) for a in args]
            shapes = None
            if candidate.alive and exact[0]:
                shapes = self._infer(op, metas, outs)
                if shapes is None:
                    if informative is None:
                        observed = [self._meta(a, None, [True]) for a in args]
                        informative = self._infer(op, observed, outs) is not None
                    candidate.alive = not informative
            per_world.append(shapes)
        for k, value in enumerate(out_values):
            self.shapes[id(value)] = tuple(None if shapes is None else shapes[k] for shapes in per_world)

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

    @staticmethod
    def _infer(op, metas: list, outs: tuple) -> list | None:
        """Per output its shape by the op's rule at these exact sizes (a dim the rule cannot say
        depends on data - nonzero - and stays as observed), or None where the rule fails or gives
        another number of outputs or another rank than the trace saw."""
        try:
            inferred = op.shape(*metas)
        except Exception:  # noqa: BLE001 - the op would fail at these sizes
            return None
        inferred = [inferred] if isinstance(inferred, TensorType) else list(inferred) \
            if isinstance(inferred, (tuple, list)) else []
        if len(inferred) != len(outs) or not all(isinstance(t, TensorType) for t in inferred):
            return None
        shapes = []
        for t, out in zip(inferred, outs):
            actual = tuple(out._data.shape)
            if t.shape is None:
                shapes.append(None)
            elif len(t.shape) != len(actual):
                return None
            else:
                shapes.append(tuple(a if d is None else d if isinstance(d, int) else None
                                    for d, a in zip(t.shape, actual)))
        return shapes

    # --- the result ----------------------------------------------------------------------------
    @property
    def batch(self) -> Candidate | None:
        """The candidate the graph is dynamic in: the first one no world dropped."""
        return next((c for c in self.candidates if c.alive), None)

    def final_shape(self, value, actual: tuple) -> tuple:
        """`value`'s dims for the graph: "B" where they are the batch, None where they move with it
        otherwise, the observed size where they do not move."""
        shapes = self.shapes.get(id(value))
        batch = self.batch
        if shapes is None or batch is None:
            return actual
        worlds = [(s, probe) for s, (c, probe) in zip(shapes, self.worlds) if c is batch]
        dims = []
        for i, a in enumerate(actual):
            seen = [None if s is None else s[i] for s, _ in worlds]
            if all(d == a for d in seen):
                dims.append(a)
            elif a == batch.size and all(d == probe for d, (_, probe) in zip(seen, worlds)):
                dims.append(BATCH)
            else:
                dims.append(None)
        return tuple(dims)

    def input_shape(self, shape: tuple) -> tuple:
        """An input's dims for the graph: "B" at the batch's dim where the input has its size."""
        batch = self.batch
        if batch is None or not batch.marks(shape):
            return tuple(shape)
        return tuple(BATCH if i == batch.dim else d for i, d in enumerate(shape))
