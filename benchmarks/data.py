"""DataLoader throughput: one epoch over a 512 MB TensorDataset in batches of 256, 0 and 2 workers.

Prints MB/s per epoch (median of interleaved epochs; worker start-up included, as a user pays it)
for scriptc and torch side by side (both read the same array in memory). Targets (issue #28):
with 2 workers, at least torch's throughput and at least 80% of scriptc's own 0-worker rate.

Why 2 workers can keep up: a worker gathers each batch straight into a shared-memory block and
sends a reference of ~100 bytes; the main process maps each block once and reuses it for later
batches, so a batch's 1 MB is written once (by the worker) and never copied or pickled.
Run with OMP_NUM_THREADS=1; on a shared machine the numbers are noisy.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time

import numpy as np

from common import optional

import scriptc
from scriptc.utils.data import DataLoader, TensorDataset

torch = optional("torch")

SAMPLES, FEATURES, BATCH = 131072, 1024, 256  # 131072 x 1024 float32 = 512 MB
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the workers of finished epochs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def epoch(loader) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the main process and its workers) for one epoch."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    for _ in loader:
        pass
    return time.perf_counter() - start, _cpu_seconds() - cpu


def main() -> None:
    features = np.random.default_rng(0).standard_normal((SAMPLES, FEATURES), dtype=np.float32)
    labels = np.arange(SAMPLES, dtype=np.int64)
    megabytes = (features.nbytes + labels.nbytes) / 2 ** 20
    loaders = {}
    for workers in (0, 2):
        loaders[("scriptc", workers)] = DataLoader(
            TensorDataset(scriptc.from_numpy(features), scriptc.from_numpy(labels)), batch_size=BATCH,
            num_workers=workers)
        if torch is not None:
            loaders[("torch", workers)] = torch.utils.data.DataLoader(
                torch.utils.data.TensorDataset(torch.from_numpy(features), torch.from_numpy(labels)),
                batch_size=BATCH, num_workers=workers)
    samples = {key: [] for key in loaders}
    for _ in range(ROUNDS):
        for key, loader in loaders.items():
            samples[key].append(epoch(loader))
    rate = {key: megabytes / statistics.median(wall for wall, _ in runs) for key, runs in samples.items()}
    cpu = {key: statistics.median(cpu for _, cpu in runs) for key, runs in samples.items()}

    print(f"DataLoader epoch over a {megabytes:.0f} MB TensorDataset, batch {BATCH}, median of {ROUNDS} "
          f"interleaved epochs. MB/s: higher is better, and noisy on a shared machine; CPU s: the main process's "
          f"and its workers' CPU time per epoch, which load on the machine changes much less.\n")
    print(f"{'workers':>8} {'scriptc MB/s':>13} {'torch MB/s':>11} {'ratio':>6} {'scriptc CPU s':>14} "
          f"{'torch CPU s':>12}")
    for workers in (0, 2):
        ours, theirs = rate[("scriptc", workers)], rate.get(("torch", workers))
        torch_cols = (f"{theirs:11.0f} {ours / theirs:6.2f}" if theirs else f"{'-':>11} {'-':>6}")
        torch_cpu = f"{cpu[('torch', workers)]:12.2f}" if theirs else f"{'-':>12}"
        print(f"{workers:>8} {ours:13.0f} {torch_cols} {cpu[('scriptc', workers)]:14.2f} {torch_cpu}")
    print(f"\nscriptc 2 workers / 0 workers: {rate[('scriptc', 2)] / rate[('scriptc', 0)]:.2f} (target >= 0.80)")
    if torch is not None:
        print(f"scriptc 2 workers / torch 2 workers: {rate[('scriptc', 2)] / rate[('torch', 2)]:.2f} (target >= 1.00)")


if __name__ == "__main__":
    sys.exit(main())
