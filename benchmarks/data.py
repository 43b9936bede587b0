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


def epoch_seconds(loader) -> float:
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


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
            samples[key].append(epoch_seconds(loader))
    rate = {key: megabytes / statistics.median(times) for key, times in samples.items()}

    print(f"DataLoader epoch over a {megabytes:.0f} MB TensorDataset, batch {BATCH}, median of {ROUNDS} "
          f"interleaved epochs (MB/s, higher is better; noisy on a shared machine)\n")
    print(f"{'workers':>8} {'scriptc':>10} {'torch':>10} {'scriptc/torch':>14}")
    for workers in (0, 2):
        ours, theirs = rate[("scriptc", workers)], rate.get(("torch", workers))
        torch_cols = f"{theirs:10.0f} {ours / theirs:14.2f}" if theirs else f"{'-':>10} {'-':>14}"
        print(f"{workers:>8} {ours:10.0f} {torch_cols}")
    print(f"\nscriptc 2 workers / 0 workers: {rate[('scriptc', 2)] / rate[('scriptc', 0)]:.2f} (target >= 0.80)")
    if torch is not None:
        print(f"scriptc 2 workers / torch 2 workers: {rate[('scriptc', 2)] / rate[('torch', 2)]:.2f} (target >= 1.00)")


if __name__ == "__main__":
    sys.exit(main())
