"""Model latency: the architectures of benchmarks/zoo.py (the MLP and small CNN, the pytorch/examples
models, ResNet-18, MobileNetV2, SqueezeNet) in one table per thread count, with columns torch eager,
torch.jit frozen (torch.jit.freeze(torch.jit.trace(m))), onnxruntime, scriptc traced and scriptc
scripted without example inputs (both through optimize_for_inference), then scriptc's first call
after runtime.load in a fresh process (disk cache warm), at the saved size and at one never seen:
the median over --first-runs fresh processes, each timing one first call, and the lowest and highest,
beside what numpy's own first call costs in a fresh process. With --first-on-worker each first call
comes from a thread started after load (as a server's worker calls), one thread per input size.
The same processes then time calls that each follow an idle pause (PAUSE_S, the median of PAUSED_CALLS):
the steady state is calls back to back, which at two threads find the pool's worker spinning and
each core's share of the weights still in its L2 (the MLP at batch 1: 17 us there, ~80 us at one
thread); after a pause the worker sleeps and a call wakes it, as a first call after load does. The
first call at the new batch comes after such a lead-in too (the paused calls, then its new inputs),
so the processes then time calls at that batch after the same lead-in once it is no longer new: the
first call over those (new/seen) is what the new batch itself costs.

    python benchmarks/models.py [--threads 1,2] [--only "MLP b1,ResNet"] [--rounds 7] [--clock cpu] [--first-runs 7]
                                [--first-on-worker]

Each thread count runs in its own process, with OMP/OpenBLAS/MKL thread counts set before anything
is imported; peers never spin (OMP_WAIT_POLICY=PASSIVE, onnxruntime's allow_spinning=0). Columns
are timed in interleaved turns and medians are printed (common.timeit_interleaved). `--clock cpu`
(the default at one thread) times the CPU seconds the process spent rather than the wall clock: on
a machine others share, a one-thread call's CPU time leaves out the time it waited for a core; at
more threads the wall clock is what counts (and is what `--clock wall` times at one). The first
calls after load are timed on the same clock.

Targets (issue #30, ratios of one run): every model at most 0.8x torch.jit frozen's time at one
thread; ResNet-18, MobileNetV2, SqueezeNet and the small CNN at most 1.1x onnxruntime's; the MLP at
batch 1 and 64 at most 0.9x onnxruntime's; the first call after load within 1.5x of the steady state,
at a size never seen too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["torch", "torch.jit", "onnxruntime", "traced", "scripted"]
SETTLE_S = 0.15  # untimed calls before each timed turn (common.timeit_interleaved's warm_s)
PAUSE_S = 0.01   # the idle pause before each call of the first-call processes' "after a pause" column
PAUSED_CALLS = 9


def _run_threads(threads: int, args) -> None:
    """This script again, in a process whose libraries start with `threads` threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (the first-call processes time imports from bytecode)
    command = [sys.executable, os.path.abspath(__file__), "--child", str(threads), "--rounds", str(args.rounds),
               "--clock", args.clock, "--first-runs", str(args.first_runs)]
    if args.only:
        command += ["--only", args.only]
    if args.first_on_worker:
        command.append("--first-on-worker")
    subprocess.run(command, env=env, check=True)


def _load_child(archive: str, shapes: str, threads: int, cpu_clock: bool, on_worker: bool = False) -> dict:
    """Seconds of runtime.load, its compiles, and per input shape list in `shapes` (the first one the
    saved size, the next one new) the first call, the steady call and the median call after an idle
    pause, in a fresh process; the calls timed in CPU seconds where `cpu_clock`, from a new thread per
    shape list where `on_worker`. For each list after the first, also the median call at that size
    after the lead-in its first call had (a call at the first size after a pause, then new inputs),
    once the size is no longer new: what is left of the first call's cost is the new size's own."""
    script = (
        "import json, sys, threading, time; import numpy as np; sys.path.insert(0, sys.argv[2])\n"
        "from common import timeit_interleaved\n"
        "clock = time.process_time if sys.argv[5] == 'cpu' else time.perf_counter\n"
        "t = time.perf_counter(); import scriptc.runtime as rt; from scriptc.codegen.llvm.driver import STATS\n"
        "m = rt.load(sys.argv[1], threads=int(sys.argv[4])); load = time.perf_counter() - t\n"
        "out = {'load': load, 'compiles': STATS.compiles}\n"
        "leads = []\n"
        "def make(inputs):\n"
        "    return [np.random.default_rng(1).standard_normal(s).astype(d) if d.startswith('float') else\n"
        "            np.random.default_rng(1).integers(0, 10, s).astype(d) for s, d in inputs]\n"
        "def measure(name, inputs):\n"
        "    xs = make(inputs)\n"
        "    try:\n"
        "        t = clock(); m(*xs); first = clock() - t\n"
        "    except Exception:\n"
        "        return  # (a trace that baked this size in)\n"
        "    steady = timeit_interleaved({'m': lambda: m(*xs)}, min_time=0.1, rounds=5, clock=clock)['m']\n"
        "    paused = []\n"
        f"    for _ in range({PAUSED_CALLS}):\n"
        f"        time.sleep({PAUSE_S}); t = clock(); m(*xs); paused.append(clock() - t)\n"
        "    out[name] = [first, steady, sorted(paused)[len(paused) // 2]]\n"
        "    if leads:\n"
        "        seen = []\n"
        f"        for _ in range({PAUSED_CALLS}):\n"
        f"            time.sleep({PAUSE_S}); m(*leads[0]); ys = make(inputs); t = clock(); m(*ys); seen.append(clock() - t)\n"
        "        out[name].append(sorted(seen)[len(seen) // 2])\n"
        "    leads.append(xs)\n"
        "for name, inputs in json.loads(sys.argv[3]).items():\n"
        "    if sys.argv[6] == 'worker':\n"
        "        worker = threading.Thread(target=measure, args=(name, inputs)); worker.start(); worker.join()\n"
        "    else:\n"
        "        measure(name, inputs)\n"
        "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "-c", script, archive, HERE, shapes, str(threads),
                             "cpu" if cpu_clock else "wall", "worker" if on_worker else "loader"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _first_calls(archive: str, shapes: str, threads: int, cpu_clock: bool, runs: int, on_worker: bool) -> dict:
    """Per input shape list: (median, lowest, highest) over `runs` fresh processes of the first call
    after runtime.load over the steady call, then the medians of the first call over the call after a
    pause, of that over the steady call, and of the first call over the call after the same lead-in at
    a size seen before (None for the saved size). One first call is one sample of a noisy machine
    (single ones swung 1.0-5.4x here): each process gives one, and the median says what a first call
    costs."""
    ratios: dict[str, list[tuple]] = {}
    for _ in range(runs):
        for name, (first, steady, paused, *seen) in ((k, v) for k, v in
                                                     _load_child(archive, shapes, threads, cpu_clock, on_worker).items()
                                                     if isinstance(v, list)):
            ratios.setdefault(name, []).append((first / steady, first / paused, paused / steady,
                                                first / seen[0] if seen else None))
    summary = {}
    for name, samples in ratios.items():
        over_steady = [r[0] for r in samples]
        over_seen = [r[3] for r in samples if r[3] is not None]
        summary[name] = (statistics.median(over_steady), min(over_steady), max(over_steady),
                         statistics.median(r[1] for r in samples), statistics.median(r[2] for r in samples),
                         statistics.median(over_seen) if over_seen else None)
    return summary


def _numpy_first_call(batch: int, cpu_clock: bool, runs: int) -> tuple[float, float, float]:
    """What numpy itself does on a first call in a fresh process: the MLP's three layers as numpy
    matmuls at `batch`, first run once at batch 2 (as runtime.load primes a model), then the first
    call over the steady one - (median, lowest, highest) over `runs` processes."""
    script = (
        "import sys, time; import numpy as np; sys.path.insert(0, sys.argv[1])\n"
        "from common import timeit_interleaved\n"
        "clock = time.process_time if sys.argv[2] == 'cpu' else time.perf_counter\n"
        "rng = np.random.default_rng(0)\n"
        "w = [rng.standard_normal(s).astype(np.float32) for s in ((784, 512), (512, 512), (512, 10))]\n"
        "f = lambda x: np.maximum(np.maximum(x @ w[0], 0) @ w[1], 0) @ w[2]\n"
        "f(np.zeros((2, 784), np.float32))\n"
        "x = rng.standard_normal((int(sys.argv[3]), 784)).astype(np.float32)\n"
        "t = clock(); f(x); first = clock() - t\n"
        "print(first / timeit_interleaved({'f': lambda: f(x)}, min_time=0.1, rounds=5, clock=clock)['f'])\n")
    ratios = [float(subprocess.run([sys.executable, "-c", script, HERE, "cpu" if cpu_clock else "wall", str(batch)],
                                   capture_output=True, text=True, check=True).stdout) for _ in range(runs)]
    return statistics.median(ratios), min(ratios), max(ratios)


def _grown(inputs: list, batch_dim: int) -> list:
    """The first input's shape one larger in its batch dim: a size the archive never saw (the other
    inputs - a recurrent model's state, say - grow along that dim where they have it too: at the
    same index, as an LSTM's (layers, batch, hidden) state has it, else counted from the end)."""
    grown = []
    size = inputs[0][0][batch_dim]
    for k, (s, d) in enumerate(inputs):
        s = list(s)
        dims = (batch_dim,) if k == 0 else (batch_dim, batch_dim - (len(inputs[0][0]) - len(s)))
        dim = next((i for i in dims if 0 <= i < len(s) and s[i] == size), None)
        if dim is not None:
            s[dim] += 1
        grown.append([s, d])
    return grown


def _child(threads: int, only: list[str], rounds: int, cpu_clock: bool, first_runs: int, on_worker: bool) -> None:
    import numpy as np

    sys.path.insert(0, HERE)
    from common import fmt_time, optional, timeit_interleaved
    from zoo import MODELS

    import scriptc

    torch = optional("torch")
    ort = optional("onnxruntime")
    if torch is not None:
        torch.set_num_threads(threads)
    cache = tempfile.mkdtemp(prefix="scriptc-bench-")
    os.environ["SCRIPTC_CACHE_DIR"] = cache
    rows, notes = [], []
    clock = time.process_time if cpu_clock else time.perf_counter
    for spec in MODELS:
        if only and not any(o in spec.name for o in only):
            continue
        missing = [n for n in spec.needs if not _has(scriptc, n)]
        if missing:
            notes.append(f"{spec.name}: skipped, scriptc lacks {', '.join(missing)}")
            continue
        rng = np.random.default_rng(0)
        arrays = spec.inputs(rng)
        scriptc.manual_seed(0)
        ours = spec.make(scriptc).eval()
        xs = [scriptc.from_numpy(a) for a in arrays]
        fns, cells = {}, {}
        no_grad = scriptc.no_grad
        if torch is not None:
            theirs = spec.make(torch).eval()
            theirs.load_state_dict({k: torch.from_numpy(np.array(v.detach().numpy()))
                                    for k, v in ours.state_dict().items()})
            txs = [torch.from_numpy(a) for a in arrays]
            with torch.no_grad():
                fns["torch"] = lambda theirs=theirs, txs=txs: theirs(*txs)
                try:
                    frozen = torch.jit.freeze(torch.jit.trace(theirs, tuple(txs), check_trace=False))
                    fns["torch.jit"] = lambda frozen=frozen, txs=txs: frozen(*txs)
                except Exception as exc:  # noqa: BLE001 - a peer that cannot run this model gets no column
                    notes.append(f"{spec.name}: torch.jit failed ({type(exc).__name__})")
                if ort is not None:
                    session = _ort_session(torch, ort, theirs, txs, threads, cache, notes, spec.name)
                    if session is not None:
                        names = [i.name for i in session.get_inputs()]
                        feed = dict(zip(names, arrays))
                        fns["onnxruntime"] = lambda session=session, feed=feed: session.run(None, feed)
        traced = None
        try:
            traced = scriptc.jit.trace(ours, tuple(xs), check_trace=False)
            fast = scriptc.jit.optimize_for_inference(traced, threads=threads)
            fns["traced"] = lambda fast=fast, xs=xs: fast(*xs)
        except Exception as exc:  # noqa: BLE001 - the row says what failed instead of stopping the table
            notes.append(f"{spec.name}: scriptc traced failed ({type(exc).__name__}: {str(exc)[:80]})")
        try:
            scripted = scriptc.jit.optimize_for_inference(scriptc.jit.script(ours), threads=threads)
            fns["scripted"] = lambda scripted=scripted, xs=xs: scripted(*xs)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"{spec.name}: scriptc scripted failed ({type(exc).__name__}: {str(exc)[:80]})")
        with no_grad():
            if torch is not None:
                with torch.no_grad():
                    cells = timeit_interleaved(fns, min_time=0.1, rounds=rounds, warm_s=SETTLE_S, clock=clock)
            else:
                cells = timeit_interleaved(fns, min_time=0.1, rounds=rounds, warm_s=SETTLE_S, clock=clock)
        first = None
        if traced is not None and first_runs:
            archive = os.path.join(cache, "model.sc")
            try:
                traced.save(archive)
                shapes = [[list(a.shape), a.dtype.name] for a in arrays]
                first = _first_calls(archive, json.dumps({"saved": shapes, "new": _grown(shapes, spec.batch_dim)}),
                                     threads, cpu_clock, first_runs, on_worker)
            except Exception as exc:  # noqa: BLE001
                notes.append(f"{spec.name}: first call after load failed ({type(exc).__name__})")
        rows.append((spec.name, cells, first))
    print(f"\n=== {threads} thread{'s' if threads > 1 else ''} (median {'CPU' if cpu_clock else 'wall'} time per call, "
          f"{rounds} interleaved rounds) ===")
    header = f"{'model':<26}" + "".join(f"{c:>13}" for c in COLUMNS) + \
        f"{'tr/jit':>8}{'tr/ort':>8}{'sc/tr':>7}{'1st/st':>8}{'range':>10}{'new 1st':>9}{'range':>10}" \
        f"{'1st/pause':>10}{'pause/st':>9}{'new/seen':>9}"
    print(header)
    print("-" * len(header))
    for name, cells, first in rows:
        line = f"{name:<26}" + "".join(f"{fmt_time(cells[c]) if c in cells else '-':>13}" for c in COLUMNS)
        line += "".join(f"{_ratio(cells, a, b):>{w}}" for a, b, w in (("traced", "torch.jit", 8),
                                                                    ("traced", "onnxruntime", 8),
                                                                    ("scripted", "traced", 7)))
        if first is not None:
            line += "".join(f"{first[k][0]:>{w}.2f}x{f'{first[k][1]:.1f}-{first[k][2]:.1f}':>10}" if k in first
                            else f"{'-':>{w + 1}}{'-':>10}" for k, w in (("saved", 7), ("new", 8)))
            line += f"{first['saved'][3]:>9.2f}x{first['saved'][4]:>8.2f}x" if "saved" in first else f"{'-':>10}{'-':>9}"
            line += f"{first['new'][5]:>8.2f}x" if "new" in first and first["new"][5] is not None else f"{'-':>9}"
        print(line)
    print("ratios: time over time (lower is faster for scriptc); 1st/st: the first call after runtime.load in a new "
          f"process{', from a thread started after load,' if on_worker else ''} over the steady call, "
          f"the median of {first_runs} processes (range: the lowest and highest); "
          "new 1st: the same at a batch one larger than the archive was traced with; 1st/pause: the first call "
          f"over the median call after an idle pause of {PAUSE_S * 1e3:.0f} ms, pause/st: that over the steady call "
          "(medians of the same processes, at the saved size); new/seen: the first call at the new batch over the "
          "median call at that batch after the same lead-in (a call at the saved batch after a pause, then new "
          "inputs) once it is no longer new - what the new batch itself costs, apart from the idle spell before it")
    if first_runs:
        measured = {batch: _numpy_first_call(batch, cpu_clock, first_runs) for batch in (1, 64)}
        print("numpy's own first call in a fresh process (the MLP's layers as numpy matmuls, run once at batch 2 "
              f"before, as load primes a model), over its steady call, median of {first_runs}: " +
              ", ".join(f"batch {batch} {m:.2f}x ({low:.1f}-{high:.1f})" for batch, (m, low, high) in measured.items()))
    for note in notes:
        print(f"  note: {note}")


def _ratio(cells: dict, ours: str, theirs: str) -> str:
    if ours not in cells or theirs not in cells:
        return "-"
    return f"{cells[ours] / cells[theirs]:.2f}x"


def _has(module, dotted: str) -> bool:
    for part in dotted.split("."):
        module = getattr(module, part, None)
        if module is None:
            return False
    return True


def _ort_session(torch, ort, model, inputs, threads: int, folder: str, notes: list, name: str):
    path = os.path.join(folder, "model.onnx")
    try:
        torch.onnx.export(model, tuple(inputs), path, input_names=[f"input{i}" for i in range(len(inputs))],
                          dynamo=False)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - no onnxruntime column for this model
        notes.append(f"{name}: onnxruntime skipped ({type(exc).__name__})")
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, each in its own process")
    parser.add_argument("--only", default="", help="comma-separated parts of model names")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu: the process's CPU time at one thread (wall clock at more); wall: the wall clock")
    parser.add_argument("--first-runs", type=int, default=7,
                        help="fresh processes that each time one first call after load (0: none)")
    parser.add_argument("--first-on-worker", action="store_true",
                        help="time each first call from a thread started after load (a server's worker)")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, [o.strip() for o in args.only.split(",") if o.strip()], args.rounds,
               args.clock == "cpu" and args.child == 1, args.first_runs, args.first_on_worker)
        return
    started = time.perf_counter()
    for threads in (int(t) for t in args.threads.split(",")):
        _run_threads(threads, args)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
