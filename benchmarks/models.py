"""Model latency: the 784-512-512-10 MLP at batch 1 and 64, and a small CNN at 16x3x64x64, for numpy,
torch eager, torch.jit frozen, onnxruntime and scriptc (traced, and "scripted": jit.script with example_inputs);
cold and warm compile; first call vs steady state (for scriptc in new processes with a warm disk cache, as the
target is stated).

Targets (issue: LLVM codegen): MLP no slower than torch.jit frozen and within 1.1x of onnxruntime;
cold compile of the MLP under 1 s, warm (disk cache) under 0.1 s.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import fmt_time, optional, timeit_interleaved

import scriptc

torch = optional("torch")
ort = optional("onnxruntime")


def mlp(T):
    return T.nn.Sequential(T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(),
                           T.nn.Linear(512, 10))


def cnn(T):
    return T.nn.Sequential(T.nn.Conv2d(3, 32, 3, padding=1), T.nn.ReLU(), T.nn.Conv2d(32, 64, 3, stride=2, padding=1),
                           T.nn.ReLU(), T.nn.AdaptiveAvgPool2d(1), T.nn.Flatten(), T.nn.Linear(64, 10))


def numpy_mlp(ws):
    def run(x):
        h = np.maximum(x @ ws[0].T + ws[1], 0)
        h = np.maximum(h @ ws[2].T + ws[3], 0)
        return h @ ws[4].T + ws[5]
    return run


WARM_PROCESSES = 3
# numpy's GEMMs (and torch's) leave their workers spinning on a core that the next column's library
# needs (measured: one 512x512 float32 matmul, then a full core of CPU time for ~0.1 s): each column
# runs this long untimed before its turn is timed (timeit_interleaved), and a warm process starts
# this long after this one's last call.
SETTLE_S = 0.15
ROUNDS = 11


def warm_start(archive: str, shape: tuple) -> tuple[float, int, float, float]:
    """In fresh processes that share the disk cache, as a restarted server would: (seconds runtime.load
    takes, kernels it compiles, the first call's seconds, the steady call's seconds), each the median
    of WARM_PROCESSES processes."""
    script = ("import sys, time; import numpy as np; sys.path.insert(0, sys.argv[2]); from common import timeit; "
              "import scriptc.runtime as rt; from scriptc.codegen.llvm.driver import STATS; "
              "x = np.random.default_rng(1).standard_normal(eval(sys.argv[3])).astype(np.float32); "
              "t = time.perf_counter(); m = rt.load(sys.argv[1], threads=2); load = time.perf_counter() - t; "
              "t = time.perf_counter(); m(x); first = time.perf_counter() - t; "
              "print(load, STATS.compiles, first, timeit(lambda: m(x)))")
    # An installed package imports from byte-compiled files; PYTHONDONTWRITEBYTECODE (set on some
    # machines) would have every import in the timed load compile scriptc's source again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = []
    for _ in range(WARM_PROCESSES):
        time.sleep(SETTLE_S)
        out = subprocess.run([sys.executable, "-c", script, archive, os.path.dirname(os.path.abspath(__file__)),
                              repr(shape)], capture_output=True, text=True, check=True, env=env)
        runs.append([float(v) for v in out.stdout.split()])
    load, compiles, first, steady = (statistics.median(column) for column in zip(*runs))
    return load, int(compiles), first, steady


def main():
    if torch is not None:
        torch.set_num_threads(2)
    cache = tempfile.mkdtemp(prefix="scriptc-bench-cache-")
    os.environ["SCRIPTC_CACHE_DIR"] = cache
    rows = []
    for name, make, shape in (("MLP b1", mlp, (1, 784)), ("MLP b64", mlp, (64, 784)), ("CNN 16x3x64x64", cnn,
                                                                                          (16, 3, 64, 64))):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        ours_eager = make(scriptc).eval()
        fns, firsts = {}, {}
        if name.startswith("MLP"):
            ws = [p.detach().numpy() for p in ours_eager.parameters()]
            fns["numpy"] = lambda: numpy_mlp(ws)(x)
        no_grad = contextlib.nullcontext()
        if torch is not None:
            no_grad = torch.no_grad()
            theirs = make(torch).eval()
            theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours_eager.state_dict().items()})
            tx = torch.from_numpy(x)
            with torch.no_grad():
                fns["torch"] = lambda: theirs(tx)
                frozen = torch.jit.freeze(torch.jit.script(theirs))
                start = time.perf_counter()
                frozen(tx)
                firsts["torch.jit"] = time.perf_counter() - start
                fns["torch.jit"] = lambda: frozen(tx)
            if ort is not None:
                try:
                    path = os.path.join(cache, "model.onnx")
                    torch.onnx.export(theirs, tx, path, input_names=["x"], dynamo=False)
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = 2
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                    fns["onnxruntime"] = lambda: session.run(None, {"x": x})
                except Exception as exc:
                    print(f"(onnxruntime skipped for {name}: {type(exc).__name__})")
        traced = scriptc.jit.trace(ours_eager, scriptc.from_numpy(x))
        archive = os.path.join(cache, "model.sc")
        traced.save(archive)
        start = time.perf_counter()
        model = scriptc.runtime.load(archive, threads=2)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        model(x)
        firsts["scriptc"] = time.perf_counter() - start
        fns["scriptc"] = lambda: model(x)
        # The same model scripted rather than traced, with example inputs (so that it fuses), from its archive.
        scripted_path = os.path.join(cache, "scripted.sc")
        scriptc.jit.script(ours_eager, example_inputs=[(scriptc.from_numpy(x),)]).save(scripted_path)
        scripted = scriptc.runtime.load(scripted_path, threads=2)
        fns["scripted"] = lambda: scripted(x)
        with no_grad:
            timings = timeit_interleaved(fns, rounds=ROUNDS, warm_s=SETTLE_S)
        rows.append((name, timings, cold, warm_start(archive, shape), firsts))
    cols = ["numpy", "torch", "torch.jit", "onnxruntime", "scriptc", "scripted"]
    print(f"steady state (each column timed in turn with the others, each turn after {SETTLE_S} s of untimed "
          f"calls; median of {ROUNDS} rounds)")
    print(f"{'model':<18}" + "".join(f"{c:>13}" for c in cols) + f"{'vs torch.jit':>14}{'vs ort':>9}")
    for name, t, *_ in rows:
        cells = "".join(f"{fmt_time(t[c]) if c in t else '-':>13}" for c in cols)
        vs_jit = t["torch.jit"] / t["scriptc"] if "torch.jit" in t else float("nan")
        vs_ort = t["onnxruntime"] / t["scriptc"] if "onnxruntime" in t else float("nan")
        print(f"{name:<18}{cells}{vs_jit:>13.2f}x{vs_ort:>8.2f}x")
    print(f"\nstartup: the cold compile and its first call in this process; then, with the disk cache warm, "
          f"{WARM_PROCESSES} new processes (medians)")
    print(f"{'model':<18}{'cold load':>10}{'first':>11}{'warm load':>11}{'compiles':>9}{'first':>11}{'steady':>11}"
          f"{'ratio':>7}   {'torch.jit first':>15}{'steady':>11}{'ratio':>7}")
    for name, t, cold, (warm, compiles, first, steady), firsts in rows:
        theirs = (f"{fmt_time(firsts['torch.jit']):>15}{fmt_time(t['torch.jit']):>11}"
                  f"{firsts['torch.jit'] / t['torch.jit']:>6.1f}x") if "torch.jit" in firsts else ""
        print(f"{name:<18}{cold:>9.3f}s{fmt_time(firsts['scriptc']):>11}{warm:>10.3f}s{compiles:>9}"
              f"{fmt_time(first):>11}{fmt_time(steady):>11}{first / steady:>6.1f}x   {theirs}")


if __name__ == "__main__":
    main()
