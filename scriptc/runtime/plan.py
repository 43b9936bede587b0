"""One recipe for a method's plan, used by jit.optimize_for_inference / jit.freeze and by runtime.load:
optimize the graph (and a copy specialized for example inputs, when there are some), then build
what runs them - the compiled executor, or the reference interpreter."""

from __future__ import annotations

from dataclasses import dataclass

from scriptc.ir.graph import Graph
from scriptc.passes import PassContext, optimize

from .executor import Executor
from .interpreter import Interpreter
from .specialize import Specialized, specialized_graph


def takes_self(graph: Graph) -> bool:
    """Whether the graph's first input is the module (a method's `self`)."""
    return bool(graph.inputs) and str(graph.inputs[0].type).startswith("Module")


@dataclass
class Plan:
    """A method ready to run: `runner.run(inputs)`, with `self` first when `needs_self`."""

    generic_graph: Graph     # the optimized graph every call may run
    graph: Graph             # the one specialized for inputs like the examples (else generic_graph)
    runner: object           # Executor, Interpreter, or Specialized over two of them
    specs: list | None       # the InputSpecs of the examples (runtime/specialize.py), or None

    @property
    def needs_self(self) -> bool:
        return takes_self(self.graph)


def build_plan(graph: Graph, context: PassContext | None = None, *, specs: list | None = None, skip: int = 0,
               level: int = 2, jit: bool = True, threads: int | None = None, records: list | None = None,
               optimized: bool = False) -> Plan:
    """The plan of `graph`: optimized at `level` (not again when `optimized`: a saved plan), plus one
    specialized for `specs` (after the first `skip` inputs: a method's self) when given; compiled
    (`jit`, with `threads` for the pool) or run by the reference interpreter. `records` collects
    the generic pipeline's PassRecords."""
    context = context or PassContext()
    functions = context.functions
    generic = graph if optimized else optimize(graph, level, context, records)
    special = optimize(specialized_graph(graph, specs, skip), level, context) if specs else None

    def runner(g: Graph):
        return Executor(g, functions, threads) if jit else Interpreter(g, functions)

    run = runner(generic)
    if special is not None:
        # (Freezing may drop `self` from a graph that reads no attribute at run time.)
        run = Specialized(run, runner(special), specs, 1 if takes_self(special) else 0)
    return Plan(generic, special if special is not None else generic, run, specs)
