"""The runtime pool's hot-path rules, measured (DESIGN.md, "Runtime").

1. Where splitting a compiled kernel across threads starts to pay: a fused pointwise chain
   (tanh(x) * 0.5 + x * x) over N float32 elements, run whole on one thread and split across the
   pool's two, at each N - the runtime splits from PARALLEL_MIN_ELEMENTS (runtime/groups.py) on.
2. What the workers' short spin after each job (SPIN_LIMIT in native/threads.py, then futex sleep)
   saves a model and costs a neighbour: the same split model in one process, then in two processes
   at once (two pools on the cores), with the spin as built and with none (workers sleep at once).

Every number is a median of many calls; each configuration runs in its own process, and the two
processes of a pair run at the same time. On a shared machine read the ratios, not the times.

    python benchmarks/pool.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SECONDS = float(os.environ.get("SCRIPTC_BENCH_SECONDS", "3"))
SIZES = (1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22)


def _archive(path: str) -> None:
    import scriptc as torch

    def chain(x):
        return torch.tanh(x) * 0.5 + x * x
    torch.jit.trace(chain, torch.randn(2, 1024)).save(path)


def _median_call_us(model, x, seconds: float) -> float:
    times = []
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop:
        started = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - started)
    return float(np.median(times)) * 1e6


def _measure(path: str, threads: int, elements: int, seconds: float, always_split: bool) -> float:
    """In this process: the median call of the chain over `elements`, with `threads` threads."""
    if always_split:  # every kernel splits, whatever its size (the plan reads these when it is built)
        from scriptc.runtime import groups, program_values
        from scriptc.runtime.lowerings import kernels
        for module in (groups, kernels, program_values):
            module.PARALLEL_MIN_ELEMENTS = 1
    from scriptc.runtime import load

    model = load(path, threads=threads, prime=False)
    x = np.random.default_rng(0).standard_normal((elements // 1024, 1024)).astype(np.float32)
    for _ in range(20):
        model(x)
    return _median_call_us(model, x, seconds)


def _child(args: list[str], cache: str | None = None, spin: bool = True) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if cache:
        env["SCRIPTC_CACHE_DIR"] = cache
    return subprocess.Popen([sys.executable, __file__, "--child", json.dumps({"spin": spin, "args": args})],
                            stdout=subprocess.PIPE, env=env, text=True)


def _result(proc: subprocess.Popen) -> float:
    out, _ = proc.communicate(timeout=600)
    return json.loads(out.strip().splitlines()[-1])


def _run_child(spec: dict) -> None:
    if not spec["spin"]:
        from scriptc.native import threads
        threads.SPIN_LIMIT = 0  # (compiled anew: the child has a cache directory of its own)
    path, threads_, elements, seconds, always = spec["args"]
    print(json.dumps(_measure(path, int(threads_), int(elements), float(seconds), bool(always))))


def main() -> None:
    folder = tempfile.mkdtemp(prefix="scriptc-pool-bench-")
    path = os.path.join(folder, "chain.sc")
    _archive(path)
    print(f"1. Splitting a fused pointwise kernel across 2 threads (median call, us; {SECONDS:g} s per cell)")
    print(f"{'elements':>10}{'1 thread':>12}{'2 threads':>12}{'speedup':>10}")
    for elements in SIZES:
        one = _result(_child([path, 1, elements, SECONDS, False]))
        two = _result(_child([path, 2, elements, SECONDS, True]))
        print(f"{elements:>10}{one:>12.1f}{two:>12.1f}{one / two:>9.2f}x")
    from scriptc.runtime.groups import PARALLEL_MIN_ELEMENTS
    print(f"(the runtime splits from PARALLEL_MIN_ELEMENTS = {PARALLEL_MIN_ELEMENTS} elements on)")
    print()
    print("2. The workers' spin after a job: the 2-thread split model alone, and two such processes at once")
    print(f"{'elements':>10}{'spin':>8}{'alone us':>11}{'pair us (each)':>22}{'pair/alone':>12}")
    nospin = os.path.join(folder, "cache-nospin")
    for elements in (1 << 18, 1 << 22):
        for spin in (True, False):
            cache = None if spin else nospin
            alone = _result(_child([path, 2, elements, SECONDS, False], cache, spin))
            pair = [_child([path, 2, elements, SECONDS, False], cache, spin) for _ in range(2)]
            both = [_result(p) for p in pair]
            print(f"{elements:>10}{'on' if spin else 'off':>8}{alone:>11.1f}{both[0]:>11.1f}{both[1]:>11.1f}"
                  f"{max(both) / alone:>11.2f}x")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _run_child(json.loads(sys.argv[2]))
    else:
        main()
