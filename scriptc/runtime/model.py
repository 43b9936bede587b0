"""runtime.load: a saved archive as a compiled, thread-safe callable on numpy arrays.

Needs only numpy and llvmlite: it never imports the frontend (scriptc.jit), the eager layer
(scriptc.nn, autograd, optim) or the script grammar.
"""

from __future__ import annotations

import contextlib
import gc
import time
from typing import Any

import numpy as np

from scriptc import config
from scriptc.errors import ArchiveError
from scriptc.ir.graph import walk
from scriptc.native.blas import single_threaded
from scriptc.ops.generator import default_generator
from scriptc.passes import PassContext
from scriptc.passes.analysis import written_later
from scriptc.types import TensorType

from . import attributes
from .archive import Archive, read_archive
from .executor import Executor
from .input_dims import baked_dims_of
from .interpreter import ModuleValue
from .plan import build_plan, takes_self
from .signature import Signature
from .specialize import InputSpec, Specialized
from .values import holds_dtype, scalar_type_numbers


def _attribute_reads(graph, module_value: ModuleValue, method: str):
    """(node, owner, value) for each prim::GetAttr the graph reads from its module input, through
    submodules; ArchiveError where the archive does not hold the attribute."""
    paths: dict[int, object] = {id(graph.inputs[0]): module_value} if graph.inputs else {}
    for node in walk(graph.block):
        if node.op != "prim::GetAttr" or id(node.inputs[0]) not in paths:
            continue
        owner = paths[id(node.inputs[0])]
        try:
            value = paths[id(node.output)] = owner.get(node.attrs["name"])
        except AttributeError as exc:
            raise ArchiveError(f"graphs/{method}.ir reads an attribute the archive does not hold ({exc})") from None
        yield node, owner, value


def _check_attributes(graph, module_value: ModuleValue, method: str) -> None:
    """Every attribute the graph still reads at run time exists in the archive (checked at load)."""
    for _ in _attribute_reads(graph, module_value, method):
        pass


def _own_written_attributes(graph, module_value: ModuleValue, weights: dict, method: str) -> None:
    """Give the model its own copy of each loaded array the method writes in place (batch norm's
    running statistics in training mode, a buffer updated with add_), also as the archive's weight
    of that name (what the loaded module's state_dict reads): the archive's arrays are read-only
    views of its bytes, and torch's loaded modules update such buffers."""
    for node, owner, value in _attribute_reads(graph, module_value, method):
        if isinstance(value, np.ndarray) and not value.flags.writeable and written_later(node.output):
            name = node.attrs["name"]
            owned = value.copy()
            owner.set(name, owned)
            key = f"{owner.path}.{name}" if owner.path else name
            if weights.get(key) is value:
                weights[key] = owned


def input_specs(signature: dict, graph, skip: int, method: str) -> list | None:
    """The method's "specialize" entry (see specialize.py) as InputSpecs, checked against its graph."""
    entries = signature.get("specialize")
    if entries is None:
        return None
    where = f"manifest.json: methods.{method}.specialize"
    inputs = graph.inputs[skip:]
    if not isinstance(entries, list) or len(entries) != len(inputs):
        raise ArchiveError(f"{where}: expected a list of {len(inputs)} entries (one per input), got {entries!r}")
    specs = []
    for value, entry in zip(inputs, entries):
        try:
            spec = InputSpec.from_json(entry)
        except ValueError as exc:
            raise ArchiveError(f"{where}: {exc}") from None
        if spec is not None and not isinstance(value.type, TensorType):
            raise ArchiveError(f"{where}: input '{value.name}' is a {value.type}, not a tensor")
        specs.append(spec)
    return specs


def example_batch(signature: dict, method: str) -> int | None:
    """The method's "example_batch" entry: the size its examples had in the dim its graph names B,
    as jit.trace saves it (None when absent)."""
    batch = signature.get("example_batch")
    if batch is not None and (type(batch) is not int or not 1 <= batch <= MAX_EXAMPLE_BATCH):
        raise ArchiveError(f"manifest.json: methods.{method}.example_batch: expected an int in "
                           f"[1, {MAX_EXAMPLE_BATCH}], got {batch!r}")
    return batch


def example_sizes(signature: dict, method: str) -> dict[str, int]:
    """The method's "example_sizes" entry: the size its examples had in each dynamic dim besides B
    ({"S1": 64, "S2": 64} for a CNN's height and width), as jit.trace saves it ({} when absent)."""
    sizes = signature.get("example_sizes", {})
    if not isinstance(sizes, dict) or len(sizes) > MAX_EXAMPLE_SIZES or not all(
            isinstance(k, str) and type(v) is int and 1 <= v <= MAX_EXAMPLE_BATCH for k, v in sizes.items()):
        raise ArchiveError(f"manifest.json: methods.{method}.example_sizes: expected at most {MAX_EXAMPLE_SIZES} "
                           f"dim names with ints in [1, {MAX_EXAMPLE_BATCH}], got {sizes!r}")
    return sizes


def _counted(loop) -> bool:
    """A prim::Loop of a `for`: its condition is the constant True going in and coming back."""
    body = loop.blocks[0]
    return all(v.node is not None and v.node.op == "prim::Constant" and v.node.attrs.get("value") is True
               for v in (loop.inputs[1], body.returns[0]))


def zero_inputs(graph, needs_self: bool, batch: int, sizes: dict | None = None) -> list | None:
    """Zeros shaped like the graph's inputs with each dynamic dim named in `sizes` at its size there
    and every other one (the batch B) at `batch`, or None when an input is not a tensor of known
    rank and dtype, or the graph has a while loop (a data-dependent loop could run for ever on zeros;
    a `for` runs its count)."""
    if any(node.op == "prim::Loop" and not _counted(node) for node in walk(graph.block)):
        return None
    inputs = []
    for value in graph.inputs[1 if needs_self else 0:]:
        t = value.type
        if not isinstance(t, TensorType) or t.shape is None or t.dtype is None:
            return None
        shape = tuple(d if isinstance(d, int) else (sizes or {}).get(d, batch) for d in t.shape)
        inputs.append(np.zeros(shape, dtype=t.dtype.np))
    return inputs


# Batch 2 and then 1: batches of 2-6 rows take the compiled few-row matmul (native/heads.py)
# and 1 row BLAS's GEMV. Each is called several times, because CPython specializes a function's
# bytecode only after ~8 calls and the caches and branch predictors take as long (measured: 1 call
# each left the first real call at 2-3x the steady state, 8 at 1.1-1.3x) - unless the calls add up
# to PRIMING_BUDGET_S: a big model gets two calls per batch, so priming never costs more than a few
# of its calls.
PRIMING_BATCHES = (2, 1)
PRIMING_CALLS = 8
PRIMING_BUDGET_S = 0.02
# Neither of those reaches the GEMMs, nor makes the buffers of a real batch: a first call at a batch
# wider than any before faults in its outputs' memory (the CNN at batch 16: ~25 MB, 6000 pages) and
# works out its launches, and BLAS sets up its threads' buffers at their first GEMM (the MLP's first
# batch-64 call: 2.1x the steady state, 1.3x after one call at 32 rows at load; the CNN's batch 16,
# 3.3x). So a wide batch follows, called like the others: the widest power of two up to
# WIDE_PRIMING_BATCH whose time fits in half the budget, as the fastest batch-1 call plus what each
# row more cost between the fastest batch-1 and batch-2 calls. (Not the batch-2 call's time per row:
# a recurrent model's call is mostly its steps' fixed cost - word-LM's batch 2 takes 1.1 ms, batch 1
# 0.8 - and that guess gave it a wide batch of 4, which left its first real call at batch 20 at 1.4x
# the steady state; 16 leaves it at 1.05x.) Then batches 2 and 1 again, since the arenas the wide
# calls grew stay: a small call right after wide ones finds the cache and predictors set for those
# (the MLP's batch-1 call after batch-64 calls: 83 us, after batch-1 calls 75; batch 2: 94 and 77),
# and a wide one after small ones hardly notices (the MLP's first batch-64 call: 1.04x either way).
WIDE_PRIMING_BATCH = 64
# None of those runs at the batch the archive was traced at when it is wider (DCGAN G's 16, super-res's
# 4): the arenas are sized for it without running it (RESERVE below), but at two threads the pool's
# worker had hardly run at load (DCGAN G: 0.2 ms of its CPU in a 256 ms load; its batch-1 and -2 calls
# hardly split) and the first real call, its first long job, ran 1.2-1.6x the steady state where the
# next ones ran 1.0 - also after a 10 ms pause, so not a worker asleep; 5 ms of both cores spinning
# before it took half of that away, and one call at the traced batch before it all (1.00-1.03x, the
# process's threads at real-time priority on this shared machine, in the place of an idle one). So that
# call runs once, on zeros, after the wide batch, when the fastest batch-1 and -2 calls say it takes at
# most EXAMPLE_PRIMING_BUDGETS priming budgets (DCGAN G: ~16 ms at two threads, ~26 at one).
EXAMPLE_PRIMING_BUDGETS = 2.5
# A server calls from worker threads, not the one that loaded the model: after priming, each segment
# program makes its state for that many threads' first calls ahead (segments.Program.prepare_threads),
# on the loading thread, so that a worker's first call does not make it.
PREPARED_THREADS = 4
# Priming stops at the budget, so a model whose call takes milliseconds is never run at the batch it
# was traced at, and its first real call there grew its arenas to what that batch needs and faulted
# them in (super-res at batch 4, DCGAN G at 16: 12-14 MB). Load sizes them for that batch instead,
# from the program's own shape arithmetic without running it (segments.Program.reserve), and writes
# them once: ~3 ms of load for DCGAN G's 15 MB. Up to RESERVE_LIMIT_BYTES per program.
RESERVE_LIMIT_BYTES = 256 << 20
MAX_EXAMPLE_BATCH = 1 << 20
MAX_EXAMPLE_SIZES = 64


def _call_estimate(one_row_s: float, two_rows_s: float, batch: int) -> float:
    """Seconds a call at `batch` takes, from the fastest batch-1 and batch-2 calls."""
    return one_row_s + max(two_rows_s - one_row_s, 0.0) * (batch - 1)


def _wide_priming_batch(one_row_s: float, two_rows_s: float) -> int:
    per_row = max(two_rows_s - one_row_s, 1e-9)
    fits = int((PRIMING_BUDGET_S / 2 - one_row_s) / per_row) + 1 if one_row_s < PRIMING_BUDGET_S / 2 else 0
    return min(WIDE_PRIMING_BATCH, 1 << (fits.bit_length() - 1)) if fits >= 1 else 0


def _blas_on_the_calling_thread():
    """A context in which numpy's BLAS runs on the calling thread alone. A load runs in it: its plans'
    building and a segment's first call (which runs its steps through numpy) made threaded products,
    after which OpenBLAS's thread spun ~90 ms (it waits for more work that long) on the CPU the pool's
    worker needs for the first real call; the calls after run segment programs, which never start it."""
    blas = single_threaded()
    return blas.section() if blas is not None else contextlib.nullcontext()


class RuntimeModel:
    """A loaded model: call it (or .run_method(name, ...)) with numpy arrays or tensors."""

    def __init__(self, archive: Archive, device: str = "cpu", threads: int | None = None, jit: bool | None = None,
                 prime: bool = True):
        if str(device) != "cpu":
            from scriptc import cuda
            cuda.require()
        self.archive = archive
        self.signatures = archive.signatures
        flat: dict[str, Any] = dict(archive.weights)
        flat.update({k: attributes.resolve(v, archive.weights) for k, v in archive.attributes.items()})
        self.module_value = ModuleValue.from_flat(flat)
        use_jit = config.jit_enabled() if jit is None else jit
        self.graphs = {}
        self.runners = {}
        self.needs_self = {}
        self.returns_dtypes: dict[str, bool] = {}  # whose results are walked for dtypes (scalar_type_numbers)
        self.signature: dict[str, Signature] = {}
        self.example_batches: dict[str, int | None] = {}
        self.example_sizes: dict[str, dict[str, int]] = {}
        for name, graph in archive.graphs.items():
            context = PassContext(functions=archive.functions,
                                  module_value=self.module_value if archive.kind == "module" else None)
            skip = 1 if takes_self(graph) else 0
            entries = archive.signatures.get(name, {}).get("inputs", [])
            baked = baked_dims_of(archive.signatures.get(name, {}), name, len(graph.inputs) - skip)
            self.signature[name] = Signature.of_graph(name, graph, skip, [e["name"] for e in entries], baked,
                                                      {e["name"]: e["default"] for e in entries if "default" in e})
            specs = input_specs(archive.signatures.get(name, {}), graph, skip, name)
            self.example_batches[name] = example_batch(archive.signatures.get(name, {}), name)
            self.example_sizes[name] = example_sizes(archive.signatures.get(name, {}), name)
            if archive.kind == "module":
                _own_written_attributes(graph, self.module_value, archive.weights, name)
            try:
                plan = build_plan(graph, context, specs=specs, skip=skip, jit=use_jit, threads=threads)
            except AttributeError as exc:
                raise ArchiveError(f"graphs/{name}.ir: {exc} in the archive's weights or attributes") from None
            for optimized in {id(g): g for g in (plan.generic_graph, plan.graph)}.values():
                _check_attributes(optimized, self.module_value, name)
            self.graphs[name] = plan.graph  # the specialized plan's graph, when there is one
            self.needs_self[name] = plan.needs_self
            self.runners[name] = plan.runner
            self.returns_dtypes[name] = any(holds_dtype(v.type) for v in graph.outputs)
        # Loading allocates many objects (graphs, plans, and a process's imports before it), which
        # leaves the collector's young generations at some point of their cycle: when nearly full, a
        # collection ran inside the first real call (1.0-1.5 ms of the MLP's first batch-64 call
        # here, in processes with one import history, none in others). Collected now, before priming
        # leaves the first call's data in cache: ~1.5 ms of the load (a full collection takes 12-16).
        gc.collect(1)
        if prime and use_jit:
            # A model with random ops (randn_like, a dropout in training mode) draws from the default
            # generator as it primes: its stream is put back, so that a seeded program draws what it
            # would have drawn had it loaded the model with prime=False.
            bits = default_generator.rng.bit_generator
            stream = bits.state
            try:
                for name in self.runners:
                    self._prime(name)
            finally:
                bits.state = stream
            for runner in self.runners.values():
                if isinstance(runner, (Executor, Specialized)):
                    runner.prepare_threads(PREPARED_THREADS)
            for name in self.runners:
                self._reserve(name)

    def _reserve(self, name: str) -> None:
        """Size the loading thread's arenas for a call at the method's example batch (RESERVE_LIMIT_BYTES),
        where its plan is one segment program from inputs to outputs (else there is no telling what
        the later segments' inputs would be without running the earlier ones)."""
        runner = self.runners[name]
        batch = self.example_batches[name]
        if batch is None or not isinstance(runner, Executor) or runner.whole is None:
            return
        inputs = zero_inputs(self.graphs[name], self.needs_self[name], batch, self.example_sizes[name])
        if inputs is not None:
            runner.whole.reserve([self.module_value] + inputs if self.needs_self[name] else inputs,
                                 RESERVE_LIMIT_BYTES)

    def _prime(self, name: str) -> None:
        """Run a method on zeros before the first real call, so that it finds BLAS's buffers and
        threads set up, its launch tables built, its bytecode specialized and its code and weights in
        cache (a first call otherwise takes 3-5x the steady state; no compiling happens here, that is
        done already)."""
        started = None
        graph, needs_self = self.graphs[name], self.needs_self[name]
        fastest: dict[int, float] = {}  # batch -> its fastest call after the first of all
        batches = [(batch, PRIMING_CALLS) for batch in PRIMING_BATCHES]
        # (the wide and the traced batch join once batches 2 and 1 timed a row)
        for index, (batch, calls) in enumerate(batches):
            inputs = zero_inputs(graph, needs_self, batch, self.example_sizes[name])
            if inputs is None:
                return
            for call in range(calls):
                call_started = time.perf_counter()
                if not self._prime_call(name, inputs):
                    return
                now = time.perf_counter()
                if started is not None:  # (the first call of all runs cold: 5-10x slower)
                    fastest[batch] = min(fastest.get(batch, now - call_started), now - call_started)
                # The budget counts from the second call: the first writes the segments' programs
                # down, which a first real call would otherwise do (word-LM: 40 ms, 5 of its calls,
                # that left one call per batch and its first real call at 1.4-1.6x the steady state).
                started = started or now
                # (Twice at least: a segment's first call runs its steps and writes its program down,
                # the second runs the program and sizes its arenas - a model whose first call alone
                # spent the budget left MobileNetV2's first real call to grow 14 MB of them: 2.8-8.8x.)
                if call >= 1 and now - started > PRIMING_BUDGET_S:
                    break
            if index == len(PRIMING_BATCHES) - 1:
                wide = _wide_priming_batch(fastest[1], fastest[2])
                later = [(wide, PRIMING_CALLS)] if wide > max(PRIMING_BATCHES) else []
                example = self.example_batches[name]
                if example is not None and example not in (*PRIMING_BATCHES, wide) and _call_estimate(
                        fastest[1], fastest[2], example) <= EXAMPLE_PRIMING_BUDGETS * PRIMING_BUDGET_S:
                    later.append((example, 1))
                if later:
                    batches += later + [(batch, PRIMING_CALLS) for batch in PRIMING_BATCHES]

    def _prime_call(self, name: str, inputs: list) -> bool:
        """One priming call; False when the model rejects zeros (a data check that raises): such a
        model is primed by its first real call."""
        try:
            with np.errstate(all="ignore"):  # log(0) and the like are no news to the user at load
                self.run_method(name, *inputs)
        except Exception:
            return False
        return True

    @property
    def compiled_kernels(self) -> int:
        return sum(r.compiled_groups for r in self.runners.values() if isinstance(r, (Executor, Specialized)))

    def run_method(self, name: str, *inputs, **named):
        """Run method `name` on `inputs` (and inputs by name), checked against its signature first
        (SignatureError, TypeError): numpy arrays, tensors or lists of numbers where it takes a
        tensor; an Optional input may be None or left out. A dtype, given or returned, is its ScalarType
        number (6 for float32) as torch's loaded modules take and return it."""
        if name not in self.runners:
            raise AttributeError(f"the archive has no method '{name}' (it has: {', '.join(sorted(self.runners))})")
        args = self.signature[name].bind(inputs, named)
        if self.needs_self[name]:
            args = [self.module_value] + args
        outputs = self.runners[name].run(args)
        if self.returns_dtypes[name]:
            outputs = [scalar_type_numbers(o) for o in outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __call__(self, *inputs, **named):
        return self.run_method("forward", *inputs, **named)

    def __getattr__(self, name: str):
        runners = self.__dict__.get("runners", {})
        if name in runners:
            return lambda *inputs, **named: self.run_method(name, *inputs, **named)
        raise AttributeError(name)


def load(path, device: str = "cpu", threads: int | None = None, jit: bool | None = None,
         prime: bool = True) -> RuntimeModel:
    """Load a `.sc` archive (a path, or a binary file object), validate it, and compile it for
    `device` (kernels come from the disk cache when another process already compiled them).
    ArchiveError for a bad file.

    With `prime` (the default), each method then runs a few times on zeros at batch 2 and 1, at
    the widest batch up to 64 that is cheap, once at the batch `jit.trace` saw when that call takes
    at most ~50 ms, and at 2 and 1 again (after the first call, which writes the programs down, at
    most ~20 ms of calls besides the traced batch's), as serving systems warm a model up
    at load: a first real call at a batch up to that one is then within ~1.5x of the steady
    state instead of 3-5x (a wider one pays for its new buffers' memory). The batch is the dim the
    archive's graph names B (jit.trace picks the dim the trace generalizes in: a sequence-first
    LSTM's is dim 1). Methods with loops or non-tensor inputs are not primed. What priming draws from
    the default generator (a model with random ops) is given back: the stream is where it was.

    Every call is checked against the method's signature before any kernel runs (run_method)."""
    return build(read_archive(path), path, device, threads, jit, prime)


def build(archive: Archive, path, device: str = "cpu", threads: int | None = None, jit: bool | None = None,
          prime: bool = True) -> RuntimeModel:
    """The RuntimeModel of an archive read from `path` (load's arguments); whatever its graphs' build
    raises is an ArchiveError."""
    if str(device) != "cpu":
        from scriptc import cuda
        cuda.require()
    try:
        with _blas_on_the_calling_thread():
            return RuntimeModel(archive, device, threads, jit, prime)
    except ArchiveError:
        raise
    except Exception as exc:  # the archive's graphs do not build: its problem, whatever the pass says
        raise ArchiveError(f"{path}: the archive's graphs do not build into a plan: {type(exc).__name__}: {exc}") \
            from exc
