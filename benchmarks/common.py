"""Shared helpers for the benchmark scripts: timing, optional peers, and the ratio table."""

from __future__ import annotations

import os
import statistics
import time

# Peers that spin their worker threads would starve ours on 2 cores (DESIGN.md, Runtime).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def optional(module: str):
    try:
        return __import__(module)
    except ImportError:
        return None


def timeit(fn, min_time: float = 0.2, repeat: int = 5) -> float:
    """Median seconds per call over `repeat` rounds of at least `min_time` each."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            break
        n *= 4
    per_round = max(1, int(n * (min_time / max(elapsed, 1e-9))))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        samples.append((time.perf_counter() - start) / per_round)
    return statistics.median(samples)


def timeit_interleaved(fns: dict, min_time: float = 0.2, rounds: int = 15, warm_s: float = 0.0,
                       clock=time.perf_counter) -> dict:
    """Median seconds per call of each function, measured in turns: every round times each function
    once, so a noisy neighbour slows them alike instead of whichever was running at the time.
    `warm_s`: each turn first calls its function untimed for that long - the threads the previous
    turn woke spin on for ~0.1 s (OpenBLAS's after a threaded call), on a core this turn needs, and
    this machine runs the first tens of ms of calls after any pause 1.3-2x slower (numpy's own
    64x784x512 matmul too): a turn timed at once measures those, not its function.
    `clock`: time.process_time times the CPU the process spent instead of the wall clock - on a
    machine others share, a single-threaded call's CPU time does not count the time it waited for a
    core (it still counts caches others evicted)."""
    per_round = {}
    for name, fn in fns.items():
        fn()
        n, elapsed = 1, 0.0
        while elapsed < min_time / rounds:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            elapsed = time.perf_counter() - start
            n *= 2
        per_round[name] = max(1, n // 2)
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            warm_until = time.perf_counter() + warm_s
            while time.perf_counter() < warm_until:
                fn()
            start = clock()
            for _ in range(per_round[name]):
                fn()
            samples[name].append((clock() - start) / per_round[name])
    return {name: statistics.median(v) for name, v in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.2f} s "


def table(title: str, rows: list[tuple[str, dict[str, float]]], baseline: str, ours: str = "scriptc") -> str:
    """Rows of timings by implementation, with each column's ratio to `baseline` (>1 = faster than it)."""
    columns = []
    for _, timings in rows:
        for k in timings:
            if k not in columns:
                columns.append(k)
    header = f"{'case':<34}" + "".join(f"{c:>14}" for c in columns) + f"{ours + ' vs ' + baseline:>22}"
    lines = [title, header, "-" * len(header)]
    for name, timings in rows:
        cells = "".join(f"{fmt_time(timings[c]) if c in timings else '-':>14}" for c in columns)
        ratio = timings[baseline] / timings[ours] if baseline in timings and ours in timings else float("nan")
        lines.append(f"{name:<34}{cells}{ratio:>21.2f}x")
    return "\n".join(lines)
