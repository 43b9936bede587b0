"""The pass pipeline: an ordered, named list of passes and the one runner that times, verifies and
dumps them (SCRIPTC_DUMP=<pass>|all, SCRIPTC_DEBUG=1 verifies after each)."""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from scriptc import config
from scriptc.ir.graph import Graph
from scriptc.ir.verify import VerifyError, verify

from .canonicalize import canonicalize
from .constant_fold import constant_fold
from .cse import cse
from .dce import dce
from .fold_conv_bn import fold_conv_bn
from .fold_embedding_linear import fold_embedding_linear
from .freeze import freeze
from .fuse import fuse
from .inline import inline
from .refine_ranks import refine_ranks
from .remove_mutation import remove_mutation
from .shape_infer import shape_infer
from .sink_embedding import sink_embedding
from .transpose_frozen_linear import transpose_frozen_linear


@dataclass
class PassContext:
    """What passes may need beyond the graph: helper functions to inline, the module to freeze."""

    functions: dict = field(default_factory=dict)
    module_value: object = None
    preserved: frozenset = frozenset()  # jit.freeze's preserved_attrs: dotted attribute paths not folded


@dataclass
class PassRecord:
    name: str
    seconds: float
    nodes_before: int
    nodes_after: int
    changed: bool


# (name, what it does, how to run it, lowest level it runs at)
PIPELINE: list[tuple[str, str, Callable[[Graph, PassContext], bool], int]] = [
    ("inline", "inline prim::Call of compiled helpers", lambda g, c: inline(g, c.functions), 0),
    ("freeze", "module attributes become constants", lambda g, c: freeze(g, c.module_value, c.preserved)
     if c.module_value is not None else False, 1),
    ("remove_mutation", "in-place ops and appends to functional form", lambda g, c: remove_mutation(g), 1),
    ("shape_infer", "dtypes and shapes from the op table rules", lambda g, c: shape_infer(g), 1),
    ("constant_fold", "evaluate constant subexpressions, constant ifs, short loops", lambda g, c: constant_fold(g), 1),
    ("canonicalize", "algebraic peepholes", lambda g, c: canonicalize(g), 1),
    ("cse", "common subexpressions", lambda g, c: cse(g), 1),
    ("dce", "dead code", lambda g, c: dce(g), 1),
    ("freeze", "attributes that folding made read-only; drop an unused self", lambda g, c: freeze(g, c.module_value, c.preserved)
     if c.module_value is not None else False, 1),
    # (A scripted nn.Conv2d's result comes out of an If on its padding_mode until folding takes the
    # branch: only then is it a fresh tensor that an in-place ReLU may write functionally.)
    ("remove_mutation", "in-place ops on what folding showed fresh", lambda g, c: remove_mutation(g), 1),
    # (A scripted nn.LSTM unsqueezes its input only where its rank is 2: in each branch the rank is
    # known, so the sizes there fold, and fold_embedding_linear can follow an embedding through it.)
    ("refine_ranks", "a tensor's rank where the guards and branches around a point fix it",
     lambda g, c: refine_ranks(g), 1),
    ("shape_infer", "shapes after simplification", lambda g, c: shape_infer(g), 1),
    ("constant_fold", "the sizes refined ranks fixed", lambda g, c: constant_fold(g), 1),
    # (A scripted model's global average pool reads a ReLU that was in-place, of a conv2d that was in
    # an If, until the passes above: only now can canonicalize see it is of 3-D or 4-D floats.)
    ("canonicalize", "peepholes on what folding and mutation removal showed", lambda g, c: canonicalize(g), 1),
    ("dce", "what those peepholes replaced", lambda g, c: dce(g), 1),
    ("fold_conv_bn", "frozen conv + batch_norm into one conv", lambda g, c: fold_conv_bn(g), 1),
    ("sink_embedding", "an If between row views of one embedding into the embedding of the indices' If",
     lambda g, c: sink_embedding(g), 2),
    ("dce", "the views and the embedding that sinking replaced", lambda g, c: dce(g), 2),
    ("fold_embedding_linear", "a frozen linear of frozen embedding rows into an embedding of the product table",
     lambda g, c: fold_embedding_linear(g), 2),
    ("transpose_frozen_linear", "linear with a frozen weight into matmul by its stored transpose, plus bias",
     lambda g, c: transpose_frozen_linear(g), 2),
    ("fuse", "pointwise groups, reductions and epilogues into prim::FusionGroup", lambda g, c: fuse(g), 2),
    ("dce", "dead code after fusion", lambda g, c: dce(g), 2),
]


class PassError(RuntimeError):
    """A pass failed; names the pass."""


def optimize(graph: Graph, level: int = 2, context: PassContext | None = None,
             records: list | None = None) -> Graph:
    """Run the pipeline on a copy of `graph` at `level` (0: inline only, 1: simplify, 2: also fuse).
    Appends a PassRecord per pass to `records` (time and node counts)."""
    # A graph is a web of small objects: the cyclic GC rescanning them made the pipeline superlinear.
    gc_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run_pipeline(graph, level, context or PassContext(), records)
    finally:
        if gc_enabled:
            gc.enable()


def _run_pipeline(graph: Graph, level: int, context: PassContext, records: list | None) -> Graph:
    graph = graph.copy()
    dump = config.dump_after()
    debug = config.debug()
    for name, _, run, min_level in PIPELINE:
        if level < min_level:
            continue
        before = len(graph)
        start = time.perf_counter()
        try:
            changed = bool(run(graph, context))
        except (VerifyError, AttributeError):
            raise  # AttributeError: freeze met a module without the attribute the graph reads
        except Exception as exc:
            raise PassError(f"pass '{name}' failed: {type(exc).__name__}: {exc}") from exc
        seconds = time.perf_counter() - start
        if debug:
            try:
                verify(graph)
            except VerifyError as exc:
                raise PassError(f"pass '{name}' produced an invalid graph: {exc}") from exc
        if records is not None:
            records.append(PassRecord(name, seconds, before, len(graph), changed))
        if dump in (name, "all"):
            print(f"# --- after {name} ---\n{graph}", file=sys.stderr)
    return graph
