"""DataLoader throughput: one epoch over a 512 MB TensorDataset in batches of 256, 0 and 2 workers.

Prints MB/s per epoch (median of interleaved epochs; worker start-up included, as a user pays it)
for scriptc and torch side by side (each reads the same array in memory). Targets (issue #28):
with 2 workers, at least torch's throughput and at least 80% of scriptc's own 0-worker rate.

Each library's loaders run in a peer process of their own, driven epoch by epoch from here so
that the epochs interleave (and the libraries take turns to go first): a process that has
imported torch forks several times slower (6-13 ms, at times 50, instead of ~1 ms here: torch's
own memory and fork handlers), which would charge torch's import to every scriptc worker
start-up; a scriptc user's process has no torch in it, and a torch user's no scriptc. scriptc
runs in a peer too, so that every library's loaders (a baseline's included) run alike. On a
busy machine the rates still swing by a third between runs of the same code (BENCH_BASELINE set
to the same checkout showed 1.15 against 0.70): compare the CPU column, or many runs.

BENCH_BASELINE=/path/to/another/checkout adds a column for that checkout's scriptc, run in a peer
process the same way, so a change can be compared with what it replaces in one interleaved run.

Why 2 workers can keep up: a worker copies each batch's rows straight into one shared-memory
block (a SequentialSampler's batch, the default, is one memmove per tensor; any other batch one
take per tensor), its task comes as a fixed header of the range and the blocks handed back (no
pickle), and it announces the batch with a header of ~100 bytes in a shared-memory ring slot;
the main process maps each block once, builds the batch's tensors as views of it, and hands the
block back for a later batch once nothing uses it, so a batch's 1 MB is written once (by the
worker) and never copied or pickled. A batch that is already there when the main process asks
for it, and a task queued before its worker needs it, cost no system call (the rings'
semaphores are futexes); the first tasks are queued before the workers fork, the workers exit on
their own after their last batch, and the next epoch's workers write into the blocks the last
ones used. The CPU column shows what is left (~1.6x the 0-worker CPU in all, ~1.9x before the
memmove and header tasks; measured with perf's cpu-clock sampling, this VM has no hardware
counters): the 0-worker epoch is one gather per batch in one process. The workers take three
quarters of a 2-worker epoch's CPU: half of theirs is the copy, 29% Python (a few microseconds
of it on a warm cache; the copy has just flushed the cache each time), 12% the kernel (wake-ups,
page faults); the main process's quarter is two thirds Python and a fifth kernel (fork's
page-table copy, wake-ups, copy-on-write faults). A worker's copy costs more than the 0-worker
loop's because the block it writes was written a few batches ago and has left the cache
(rotating 3 destinations instead of reusing 1: +11%, private memory the same, so not shared
memory as such; the dataset is on transparent huge pages, the blocks are memfd pages) and two
copies at once share the memory bandwidth (+0-15%). (Streaming stores, which skip reading the
old lines back, took ~4% off a 2-worker epoch here, whose loop never reads a batch; with a loop
that reads each batch, as training does, the main process read them from memory instead of the
cache and the epoch took 1.3x as long: rejected.) Each epoch forks both workers (~0.5-1 ms each
in the main process), a worker spends ~1.4 ms of CPU before its loop and ~2 ms more before its
first task (at load 7; copy-on-write faults and a cold cache: its first scriptc.manual_seed takes
0.7 ms, a second one 0.04) and its exit ~2 ms in the kernel (tearing down the address space it
shares with the main process), which the main process waits for at the end of the epoch.
Whenever another process holds one of the 2 cores, a 2-worker epoch runs on about one and its
wall time follows its CPU: about half the 0-worker rate.

What the defaults lose on a busy machine is scheduling, not copying: batches come back in order
and at most prefetch_factor (2) per worker are loaded ahead, so whenever the worker holding the
next batch waits for a CPU, the other one runs out of tasks and sleeps too. (Tasks of a
TensorDataset go to the least busy worker, and the main process only wakes for the batch it
returns next, which takes the worst of it away.) The last two rows keep the workers between
epochs (no fork per epoch) and let them run 16 batches ahead, or hand batches out as they
arrive: the transport the same, the waits fewer. (Their CPU column leaves out the persistent
workers, which have not exited when it is read.)
Run with OMP_NUM_THREADS=1; on a shared machine the numbers are noisy.
"""

from __future__ import annotations

import importlib
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
BASELINE = os.environ.get("BENCH_BASELINE")  # a checkout of scriptc to compare with, run in a peer process
# (workers, prefetch_factor, persistent_workers, in_order): the two defaults, then 2 workers kept
# between epochs and let run further ahead, or unordered, which show what the defaults lose to scheduling
# (module doc).
CONFIGS = ((0, None, False, True), (2, None, False, True), (2, 16, True, True), (2, None, True, False))


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


def loaders(library) -> list:
    """library's DataLoaders over the benchmark's TensorDataset, one per entry of CONFIGS."""
    features, labels = dataset_arrays()
    data = library.utils.data
    dataset = data.TensorDataset(library.from_numpy(features), library.from_numpy(labels))
    return [data.DataLoader(dataset, batch_size=BATCH, num_workers=workers, prefetch_factor=prefetch,
                            persistent_workers=persistent, in_order=in_order)
            for workers, prefetch, persistent, in_order in CONFIGS]


def peer(library_name: str) -> None:
    """A peer process: library_name's loaders, one epoch per CONFIGS index read from stdin."""
    library = importlib.import_module(library_name)
    ready = loaders(library)
    for loader in ready:
        if loader.persistent_workers:
            epoch(loader)
    print("ready", flush=True)
    for line in sys.stdin:
        wall, cpu = epoch(ready[int(line)])
        print(wall, cpu, flush=True)
    ready.clear()  # persistent workers stop here, not in the interpreter's shutdown


class Peer:
    """Runs a library's epochs in a peer process (see the module doc); `path` goes first on its
    PYTHONPATH (a baseline checkout of scriptc)."""

    def __init__(self, library_name: str, path: str | None = None):
        env = dict(os.environ)
        if path is not None:
            env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
        self.process = subprocess.Popen([sys.executable, __file__, "--peer", library_name], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {library_name} peer process did not start")

    def epoch(self, config: int) -> tuple[float, float]:
        self.process.stdin.write(f"{config}\n")
        self.process.stdin.flush()
        wall, cpu = self.process.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def interleaved_epochs(peers: dict) -> dict:
    """{(library, CONFIGS index): [(wall, CPU seconds) per round]}: the peers' epochs (by name) in
    turns, the order of the libraries rotating from round to round."""
    samples = {(library, config): [] for library in peers for config in range(len(CONFIGS))}
    order = list(peers)
    for _ in range(ROUNDS):
        for config in range(len(CONFIGS)):
            for name in order:
                samples[(name, config)].append(peers[name].epoch(config))
        order = order[1:] + order[:1]  # each library runs first in turn: the one before it leaves no bias
    return samples


def main() -> None:
    megabytes = (SAMPLES * FEATURES * 4 + SAMPLES * 8) / 2 ** 20
    peers = {}
    try:
        peers["scriptc"] = Peer("scriptc")
        if BASELINE:
            peers["baseline"] = Peer("scriptc", BASELINE)
        if importlib.util.find_spec("torch") is not None:
            peers["torch"] = Peer("torch")
        load_before = os.getloadavg()[0]
        samples = interleaved_epochs(peers)
        load_after = os.getloadavg()[0]
    finally:
        for process in peers.values():
            process.close()
    rate = {key: megabytes / statistics.median(wall for wall, _ in runs) for key, runs in samples.items()}
    cpu = {key: statistics.median(cpu for _, cpu in runs) for key, runs in samples.items()}
    libraries = list(peers)

    print(f"DataLoader epoch over a {megabytes:.0f} MB TensorDataset, batch {BATCH}, median of {ROUNDS} "
          f"interleaved epochs (peers in processes of their own"
          f"{f'; baseline: scriptc from {BASELINE}' if BASELINE else ''}). MB/s: higher is better, and noisy on a "
          f"shared machine; CPU s: the loading process's and its workers' CPU time per epoch, which load on the "
          f"machine changes much less. Load average (1 min) {load_before:.1f} before the epochs, {load_after:.1f} "
          f"after, on {os.cpu_count()} CPUs: whatever else runs takes CPU the 2-worker rows need (module doc).\n")
    print(f"{'workers':>38} " + " ".join(f"{name + ' MB/s':>14}" for name in libraries)
          + (f" {'ratio':>6}" if "torch" in peers else "") + " " + " ".join(f"{name + ' CPU s':>14}" for name in libraries))
    for config, (workers, prefetch, persistent, in_order) in enumerate(CONFIGS):
        options = ([f"prefetch {prefetch}"] if prefetch else []) + (["persistent"] if persistent else []) + (
            [] if in_order else ["in_order=False"])
        label = f"{workers}" + (f" ({', '.join(options)})" if options else "")
        ratio = f" {rate[('scriptc', config)] / rate[('torch', config)]:6.2f}" if "torch" in peers else ""
        print(f"{label:>38} " + " ".join(f"{rate[(name, config)]:14.0f}" for name in libraries) + ratio + " "
              + " ".join(f"{cpu[(name, config)]:14.2f}" for name in libraries))
    print()
    for name in ["scriptc"] + (["baseline"] if BASELINE else []):
        print(f"{name} 2 workers / 0 workers: {rate[(name, 1)] / rate[(name, 0)]:.2f} (target >= 0.80; CPU per epoch "
              f"{cpu[(name, 1)] / cpu[(name, 0)]:.2f}x); prefetch 16, persistent: "
              f"{rate[(name, 2)] / rate[(name, 0)]:.2f}; persistent, in_order=False: "
              f"{rate[(name, 3)] / rate[(name, 0)]:.2f}")
    if "torch" in peers:
        print(f"scriptc 2 workers / torch 2 workers: {rate[('scriptc', 1)] / rate[('torch', 1)]:.2f} (target >= 1.00)")


if __name__ == "__main__":
    sys.exit(peer(sys.argv[2]) if sys.argv[1:2] == ["--peer"] else main())
