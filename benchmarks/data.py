"""DataLoader throughput: one epoch over a 512 MB TensorDataset in batches of 256, 0 and 2 workers.

Prints MB/s per epoch (median of interleaved epochs; worker start-up included, as a user pays it)
for scriptc and torch side by side (each reads the same array in memory). Targets (issue #28):
with 2 workers, at least torch's throughput and at least 80% of scriptc's own 0-worker rate.

torch's loaders run in a peer process of their own, driven epoch by epoch from here so that the
epochs still interleave: a process that has imported torch forks ~40x slower (~50 ms instead of
~1 ms, torch's own memory and fork handlers), which would charge torch's import to every scriptc
worker start-up; a scriptc user's process has no torch in it, and a torch user's no scriptc.

Why 2 workers can keep up: a worker gathers each batch straight into a shared-memory block and
sends a reference of ~100 bytes; the main process maps each block once and reuses it for later
batches, so a batch's 1 MB is written once (by the worker) and never copied or pickled.
Run with OMP_NUM_THREADS=1; on a shared machine the numbers are noisy.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

import common  # noqa: F401 - its OMP_WAIT_POLICY reaches the torch peer through the environment

SAMPLES, FEATURES, BATCH = 131072, 1024, 256  # 131072 x 1024 float32 = 512 MB
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
WORKERS = (0, 2)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the workers of finished epochs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def epoch(loader) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its workers) for one epoch."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    for _ in loader:
        pass
    return time.perf_counter() - start, _cpu_seconds() - cpu


def dataset_arrays() -> tuple[np.ndarray, np.ndarray]:
    features = np.random.default_rng(0).standard_normal((SAMPLES, FEATURES), dtype=np.float32)
    return features, np.arange(SAMPLES, dtype=np.int64)


def loaders(library) -> dict[int, object]:
    """library's DataLoader over the benchmark's TensorDataset, by number of workers."""
    features, labels = dataset_arrays()
    data = library.utils.data
    dataset = data.TensorDataset(library.from_numpy(features), library.from_numpy(labels))
    return {workers: data.DataLoader(dataset, batch_size=BATCH, num_workers=workers) for workers in WORKERS}


def torch_peer() -> None:
    """The peer process: torch's loaders, one epoch per number of workers read from stdin."""
    import torch

    ready = loaders(torch)
    print("ready", flush=True)
    for line in sys.stdin:
        wall, cpu = epoch(ready[int(line)])
        print(wall, cpu, flush=True)


class TorchPeer:
    """Runs torch's epochs in the peer process (see the module doc)."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, __file__, "--torch-peer"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the torch peer process did not start")

    def epoch(self, workers: int) -> tuple[float, float]:
        self.process.stdin.write(f"{workers}\n")
        self.process.stdin.flush()
        wall, cpu = self.process.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def main() -> None:
    import scriptc

    megabytes = sum(array.nbytes for array in dataset_arrays()) / 2 ** 20
    ours = loaders(scriptc)
    peer = TorchPeer() if importlib.util.find_spec("torch") is not None else None
    samples = {(library, workers): [] for library in ("scriptc", "torch") for workers in WORKERS}
    try:
        for _ in range(ROUNDS):
            for workers in WORKERS:
                samples[("scriptc", workers)].append(epoch(ours[workers]))
                if peer is not None:
                    samples[("torch", workers)].append(peer.epoch(workers))
    finally:
        if peer is not None:
            peer.close()
    rate = {key: megabytes / statistics.median(wall for wall, _ in runs) for key, runs in samples.items() if runs}
    cpu = {key: statistics.median(cpu for _, cpu in runs) for key, runs in samples.items() if runs}

    print(f"DataLoader epoch over a {megabytes:.0f} MB TensorDataset, batch {BATCH}, median of {ROUNDS} "
          f"interleaved epochs (torch's in a peer process). MB/s: higher is better, and noisy on a shared machine; "
          f"CPU s: the loading process's and its workers' CPU time per epoch, which load on the machine changes "
          f"much less.\n")
    print(f"{'workers':>8} {'scriptc MB/s':>13} {'torch MB/s':>11} {'ratio':>6} {'scriptc CPU s':>14} "
          f"{'torch CPU s':>12}")
    for workers in WORKERS:
        mine, theirs = rate[("scriptc", workers)], rate.get(("torch", workers))
        torch_cols = f"{theirs:11.0f} {mine / theirs:6.2f}" if theirs else f"{'-':>11} {'-':>6}"
        torch_cpu = f"{cpu[('torch', workers)]:12.2f}" if theirs else f"{'-':>12}"
        print(f"{workers:>8} {mine:13.0f} {torch_cols} {cpu[('scriptc', workers)]:14.2f} {torch_cpu}")
    print(f"\nscriptc 2 workers / 0 workers: {rate[('scriptc', 2)] / rate[('scriptc', 0)]:.2f} (target >= 0.80)")
    if peer is not None:
        print(f"scriptc 2 workers / torch 2 workers: {rate[('scriptc', 2)] / rate[('torch', 2)]:.2f} (target >= 1.00)")


if __name__ == "__main__":
    sys.exit(torch_peer() if sys.argv[1:] == ["--torch-peer"] else main())
