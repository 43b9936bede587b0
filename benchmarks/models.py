"""Model latency: the 784-512-512-10 MLP at batch 1 and 64, and a small CNN at 16x3x64x64, for numpy,
torch eager, torch.jit frozen, onnxruntime and scriptc; cold and warm compile; first call vs steady state.

Targets (issue: LLVM codegen): MLP no slower than torch.jit frozen and within 1.1x of onnxruntime;
cold compile of the MLP under 1 s, warm (disk cache) under 0.1 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import fmt_time, optional, timeit

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


def warm_load(archive: str) -> tuple[float, int]:
    """(seconds runtime.load takes, kernels it compiles) in a fresh process that shares the disk cache."""
    script = ("import sys, time; import scriptc.runtime as rt; from scriptc.codegen.llvm.driver import STATS; "
              "t = time.perf_counter(); rt.load(sys.argv[1], threads=2); "
              "print(time.perf_counter() - t, STATS.compiles)")
    # An installed package imports from byte-compiled files; PYTHONDONTWRITEBYTECODE (set on some
    # machines) would have every import in the timed load compile scriptc's source again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", script, archive], capture_output=True, text=True, check=True, env=env)
    seconds, compiles = out.stdout.split()
    return float(seconds), int(compiles)


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
        timings, firsts = {}, {}
        if name.startswith("MLP"):
            ws = [p.detach().numpy() for p in ours_eager.parameters()]
            timings["numpy"] = timeit(lambda: numpy_mlp(ws)(x))
        if torch is not None:
            theirs = make(torch).eval()
            theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours_eager.state_dict().items()})
            tx = torch.from_numpy(x)
            with torch.no_grad():
                timings["torch"] = timeit(lambda: theirs(tx))
                frozen = torch.jit.freeze(torch.jit.script(theirs))
                start = time.perf_counter()
                frozen(tx)
                firsts["torch.jit"] = time.perf_counter() - start
                timings["torch.jit"] = timeit(lambda: frozen(tx))
            if ort is not None:
                try:
                    path = os.path.join(cache, "model.onnx")
                    torch.onnx.export(theirs, tx, path, input_names=["x"], dynamo=False)
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = 2
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                    timings["onnxruntime"] = timeit(lambda: session.run(None, {"x": x}))
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
        timings["scriptc"] = timeit(lambda: model(x))
        warm, warm_compiles = warm_load(archive)
        rows.append((name, timings, cold, warm, warm_compiles, firsts))
    cols = ["numpy", "torch", "torch.jit", "onnxruntime", "scriptc"]
    print(f"{'model':<18}" + "".join(f"{c:>13}" for c in cols) + f"{'vs torch.jit':>14}{'vs ort':>9}")
    for name, t, *_ in rows:
        cells = "".join(f"{fmt_time(t[c]) if c in t else '-':>13}" for c in cols)
        vs_jit = t["torch.jit"] / t["scriptc"] if "torch.jit" in t else float("nan")
        vs_ort = t["onnxruntime"] / t["scriptc"] if "onnxruntime" in t else float("nan")
        print(f"{name:<18}{cells}{vs_jit:>13.2f}x{vs_ort:>8.2f}x")
    print(f"\n{'model':<18}{'cold load+compile':>20}{'warm load (new process)':>25}{'compiles':>10}"
          f"{'first call':>13}{'steady':>10}{'ratio':>8}{'torch.jit first':>17}{'steady':>10}{'ratio':>8}")
    for name, t, cold, warm, warm_compiles, firsts in rows:
        ours = f"{fmt_time(firsts['scriptc']):>13}{fmt_time(t['scriptc']):>10}{firsts['scriptc'] / t['scriptc']:>7.1f}x"
        theirs = (f"{fmt_time(firsts['torch.jit']):>17}{fmt_time(t['torch.jit']):>10}"
                  f"{firsts['torch.jit'] / t['torch.jit']:>7.1f}x") if "torch.jit" in firsts else ""
        print(f"{name:<18}{cold:>19.3f}s{warm:>24.3f}s{warm_compiles:>10}{ours}{theirs}")


if __name__ == "__main__":
    main()
