"""Per-call overhead of a compiled plan: a traced chain of N tiny layers (relu(x @ w), x of 1x8), each one
FusionGroup (a GEMV head and its ReLU), run as one segment program (runtime/segments.py) and as the
plan's steps one by one, at N = 1, 4, 16, 64. The work is a few hundred flops a layer, so the time is
overhead; a least-squares line through the four sizes splits it into a fixed cost per call and a
cost per node. Times are the process's CPU seconds (single-threaded calls; the machine may be shared).

Target (issue #30): the program's fixed cost under 5 us and under 0.3 us per node.

    python benchmarks/overhead.py
"""

from __future__ import annotations

import time

import numpy as np

from common import timeit_interleaved

import scriptc as torch
from scriptc.runtime.executor import Executor
from scriptc.runtime.segments import SegmentStep

SIZES = (1, 4, 16, 64)


def chain(n: int):
    rng = np.random.default_rng(n)
    weights = [torch.from_numpy(rng.standard_normal((8, 8)).astype(np.float32) * 0.3) for _ in range(n)]

    def fn(x):
        for w in weights:
            x = torch.relu(x @ w)
        return x
    return fn


def fit(times: dict) -> tuple[float, float]:
    """(fixed seconds, seconds per node) of the least-squares line through {nodes: seconds}."""
    slope, intercept = np.polyfit(list(times), list(times.values()), 1)
    return intercept, slope


def main():
    x = np.random.default_rng(0).standard_normal((1, 8)).astype(np.float32)
    program, steps = {}, {}
    for n in SIZES:
        traced = torch.jit.trace(chain(n), (torch.from_numpy(x),))
        graph = torch.jit.optimize_for_inference(traced, jit=False).graph
        executor = Executor(graph, threads=1)
        [segment] = executor.steps
        assert isinstance(segment, SegmentStep) and len(segment.nodes) == n

        def by_steps(executor=executor, segment=segment):
            frame = executor.frame_template.copy()
            frame[executor.input_slots[0]] = x
            segment.run_steps(frame)
            return frame
        timed = timeit_interleaved({"program": lambda executor=executor: executor([x]), "steps": by_steps},
                                   min_time=0.3, rounds=9, clock=time.process_time)
        program[n], steps[n] = timed["program"], timed["steps"]
    print("Per-call overhead: a traced chain of N relu(x @ w) layers on a 1x8 input (median per call)")
    print(f"{'N':>5}{'program':>12}{'steps':>12}")
    for n in SIZES:
        print(f"{n:>5}{program[n] * 1e6:>10.2f}us{steps[n] * 1e6:>10.2f}us")
    for name, times in (("program", program), ("steps", steps)):
        fixed, per_node = fit(times)
        print(f"{name:<8} fixed {fixed * 1e6:6.2f} us + {per_node * 1e6:5.2f} us per node")


if __name__ == "__main__":
    main()
