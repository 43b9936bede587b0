"""DataLoader with worker processes: every sample once, reproducible order, batches in shared
memory, errors and dead workers reported, and nothing left behind (processes, descriptors,
/dev/shm) once the loop ends. Generous timeouts and no sleeps: the machine is shared."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import scriptc as torch
from scriptc.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, default_collate, get_worker_info
from scriptc.utils.data._utils.fetch import create_fetcher
from scriptc.utils.data._utils.multiprocessing_iter import _batches_independent_of_worker
from scriptc.utils.data._utils.shared_batches import RowGatherer, WorkerBlocks


def _open_fds() -> int:
    """Open sockets and memory files: what DataLoader channels and shared-memory blocks hold
    (other descriptors come and go with unrelated machinery, such as pytest's capture)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # the listing's own descriptor
            continue
        count += target.startswith(("socket:", "/memfd:"))
    return count


def _named_shared_memory(pid: int | str = "self") -> list[str]:
    """The /dev/shm files a process maps or holds open: named segments, which can outlive it."""
    with open(f"/proc/{pid}/maps") as fh:
        mapped = [line.split()[-1] for line in fh if "/dev/shm/" in line]
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return mapped + [path for path in held if path.startswith("/dev/shm/")]


@pytest.fixture
def leaves_nothing_behind():
    """The test must leave no worker process or open descriptor behind. (Named shared memory
    is checked where it could appear, in the processes themselves: /dev/shm as a whole is
    shared with everything else running on the machine.)"""
    gc.collect()
    fds = _open_fds()
    yield
    gc.collect()
    assert multiprocessing.active_children() == []
    assert _open_fds() == fds, "descriptors leaked"
    assert _named_shared_memory() == []


def _rows(n=100, width=3):
    x = torch.from_numpy(np.arange(n * width, dtype=np.float32).reshape(n, width))
    return TensorDataset(x, torch.arange(n))


class Samples(Dataset):
    """Samples as dicts of a tensor, an int and a string: the generic fetch and collate path."""

    def __init__(self, n=40, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        info = get_worker_info()
        return {"x": torch.full((2,), float(i)), "i": i, "worker": -1 if info is None else info.id, "name": f"s{i}"}


def _ids(loader) -> list[int]:
    return [i for batch in loader for i in batch[1].tolist()]


def test_every_sample_exactly_once_and_the_order_reproducible(leaves_nothing_behind):
    def order(workers, seed):
        loader = DataLoader(_rows(), batch_size=7, shuffle=True, num_workers=workers,
                            generator=torch.Generator().manual_seed(seed))
        return _ids(loader)

    in_main = order(0, 5)
    with_workers = order(2, 5)
    assert sorted(with_workers) == list(range(100))
    assert with_workers == in_main, "workers fetch what the sampler says, in order"
    assert order(2, 5) == with_workers and order(2, 6) != with_workers


def test_batches_arrive_in_shared_memory_with_the_right_values(leaves_nothing_behind):
    ds = _rows()
    seen = 0
    for x, y in DataLoader(ds, batch_size=16, num_workers=2):
        assert x.is_shared() and y.is_shared() and not ds.tensors[0].is_shared()
        np.testing.assert_array_equal(x.numpy(), ds.tensors[0].numpy()[y.numpy()])
        seen += len(y)
    assert seen == 100


def test_batches_live_in_anonymous_shared_memory(leaves_nothing_behind):
    iterator = iter(DataLoader(_rows(), batch_size=10, num_workers=2))
    try:
        x, y = next(iterator)
        for pid in ["self", iterator._workers[0].pid]:  # (worker 1 may not have made a batch yet)
            with open(f"/proc/{pid}/maps") as fh:
                maps = fh.read()
            assert "/memfd:scriptc-storage" in maps, "the batch blocks are memory files"
            assert _named_shared_memory(pid) == [], "nothing named that could be left behind"
    finally:
        iterator._shutdown_workers()
    del iterator, x, y


def test_batches_kept_by_the_user_are_never_overwritten(leaves_nothing_behind):
    kept = list(DataLoader(_rows(), batch_size=10, num_workers=2))  # all held: no block may be reused
    assert [y.tolist() for _, y in kept] == [list(range(i, i + 10)) for i in range(0, 100, 10)]
    for x, y in kept:
        np.testing.assert_array_equal(x.numpy()[:, 0], y.numpy() * 3)
    del kept


def test_generic_samples_collate_in_the_workers(leaves_nothing_behind):
    batches = list(DataLoader(Samples(), batch_size=8, num_workers=2))
    assert [b["i"].tolist() for b in batches] == [list(range(i, i + 8)) for i in range(0, 40, 8)]
    assert batches[1]["name"] == [f"s{i}" for i in range(8, 16)]
    assert {w for b in batches for w in b["worker"].tolist()} == {0, 1}
    assert batches[2]["x"].is_shared() and batches[2]["x"][3].tolist() == [19.0, 19.0]


def _record_worker(worker_id):
    info = get_worker_info()
    info.dataset.started_by = (worker_id, info.id, info.num_workers, info.seed)


class Started(Dataset):
    started_by = None

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor(self.started_by)


def test_worker_init_fn_and_get_worker_info(leaves_nothing_behind):
    loader = DataLoader(Started(), batch_size=1, num_workers=2, worker_init_fn=_record_worker,
                        generator=torch.Generator().manual_seed(0))
    rows = [batch[0].tolist() for batch in loader]
    seeds = {row[0]: row[3] for row in rows}
    assert {tuple(row[:3]) for row in rows} == {(0, 0, 2), (1, 1, 2)}
    assert seeds[1] == seeds[0] + 1, "worker seeds are base_seed + worker id"
    epoch_two = {row[0]: row[3] for row in ([b[0].tolist() for b in loader])}
    assert epoch_two[0] != seeds[0], "each epoch draws a new base seed"
    assert get_worker_info() is None


class Sharded(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 23, step))


def test_iterable_datasets_shard_by_worker_info(leaves_nothing_behind):
    values = sorted(v for batch in DataLoader(Sharded(), batch_size=4, num_workers=2) for v in batch.tolist())
    assert values == list(range(23))
    dropped = [len(b) for b in DataLoader(Sharded(), batch_size=4, num_workers=2, drop_last=True)]
    assert dropped == [4] * 5, "each worker's short last batch is dropped"


def test_a_worker_exception_is_reraised_with_its_traceback(leaves_nothing_behind):
    loader = DataLoader(Samples(fail_at=13), batch_size=4, num_workers=2)
    with pytest.raises(ValueError) as info:
        for _ in loader:
            pass
    message = str(info.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback")
    assert "in __getitem__" in message and "bad sample 13" in message
    del info, loader


class Gated(Dataset):
    """The samples in `held` wait until the main process opens the gate: a worker slower than
    the other, or one that hangs when nobody opens it."""

    def __init__(self, gate, held, n=64):
        self.gate, self.held, self.n = gate, held, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.held:
            self.gate.wait(60)
        return torch.tensor([i])


def test_a_killed_worker_is_a_clear_error_not_a_hang(leaves_nothing_behind):
    gate = multiprocessing.get_context("fork").Event()
    iterator = iter(DataLoader(Gated(gate, range(1, 64)), batch_size=1, num_workers=2, multiprocessing_context="fork"))
    assert next(iterator).tolist() == [[0]]
    victim = iterator._workers[1].pid
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(s\) {victim}\) exited unexpectedly: the "
                                           "worker is killed by signal: Killed"):
        next(iterator)
    del iterator


def test_timeout_is_enforced(leaves_nothing_behind):
    gate = multiprocessing.get_context("fork").Event()
    iterator = iter(DataLoader(Gated(gate, range(1, 64)), batch_size=1, num_workers=1, timeout=0.5))
    next(iterator)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        next(iterator)
    gate.set()
    iterator._shutdown_workers()
    del iterator


def test_breaking_out_early_shuts_the_workers_down(leaves_nothing_behind):
    loader = DataLoader(_rows(), batch_size=5, num_workers=2, prefetch_factor=4)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    del loader, _


def test_persistent_workers_serve_every_epoch(leaves_nothing_behind):
    loader = DataLoader(_rows(), batch_size=9, shuffle=True, num_workers=2, persistent_workers=True,
                        generator=torch.Generator().manual_seed(0))
    first = _ids(loader)
    pids = [w.pid for w in loader._iterator._workers]
    for i, _ in enumerate(loader):  # an epoch left half-way: the next one starts clean
        if i == 3:
            break
    second = _ids(loader)
    assert sorted(first) == sorted(second) == list(range(100)) and first != second
    assert [w.pid for w in loader._iterator._workers] == pids
    loader._iterator._shutdown_workers()
    del loader, _


def test_unordered_batches_and_prefetch(leaves_nothing_behind):
    ids = _ids(DataLoader(_rows(), batch_size=3, num_workers=2, in_order=False, prefetch_factor=3))
    assert sorted(ids) == list(range(100))


def test_bfloat16_batches(leaves_nothing_behind):
    values = torch.arange(12).float().reshape(6, 2).to(torch.bfloat16)
    batches = list(DataLoader(TensorDataset(values), batch_size=4, num_workers=2))
    assert [b.dtype for (b,) in batches] == [torch.bfloat16] * 2
    assert [b.float().tolist() for (b,) in batches] == [values[:4].float().tolist(), values[4:].float().tolist()]


def test_samples_without_automatic_batching(leaves_nothing_behind):
    items = list(DataLoader(np.arange(12).reshape(6, 2), batch_size=None, num_workers=2))
    assert [i.tolist() for i in items] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert items[0].is_shared()


def _copy_out(batch):
    return torch.stack([s[0] for s in batch]).clone(), "x" * 100_000  # a new tensor and a big non-tensor


def test_custom_collate_results_and_big_messages_arrive(leaves_nothing_behind):
    batches = list(DataLoader(_rows(20), batch_size=10, num_workers=2, collate_fn=_copy_out))
    assert [b[0][:, 0].tolist() for b in batches] == [[3.0 * i for i in range(j, j + 10)] for j in (0, 10)]
    assert batches[0][0].is_shared() and batches[1][1] == "x" * 100_000


def test_blocks_are_reused_across_batches(leaves_nothing_behind):
    iterator = iter(DataLoader(_rows(2000, 8), batch_size=10, num_workers=2))
    for _ in iterator:
        pass
    mapped = sum(len(blocks.mappings) for blocks in iterator._blocks)
    assert mapped <= 2 * (2 + 1) * 2 + 4, f"{mapped} blocks for 200 batches: blocks are not reused"
    del iterator


def _tuple_of_fields(samples):
    return tuple(default_collate(samples))


def test_a_batch_held_stays_valid_while_later_ones_arrive(leaves_nothing_behind):
    ds = _rows(300, 5)
    iterator = iter(DataLoader(ds, batch_size=10, num_workers=2, collate_fn=_tuple_of_fields))
    held = next(iterator)
    later = list(iterator)
    assert type(held) is tuple and all(type(b) is tuple for b in later)
    for x, y in [held] + later:  # blocks are reused only once nothing holds them
        np.testing.assert_array_equal(x.numpy(), ds.tensors[0].numpy()[y.numpy()])
    assert held[1].tolist() == list(range(10)) and len(later) == 29
    assert held[0].is_shared() and held[0]._vc is held[1]._vc, "tensors on one block share a version counter"
    del iterator, held, later


def test_rows_gathered_by_workers_match_the_samples(leaves_nothing_behind):
    ds = _rows(50, 4)
    sampler = [[3, -1, 7], [49, 0], list(range(10, 31))]  # negatives index from the end, as ds[i] does
    batches = list(DataLoader(ds, batch_sampler=sampler, num_workers=2))
    for (x, y), indices in zip(batches, sampler):
        np.testing.assert_array_equal(x.numpy(), np.stack([ds[i][0].numpy() for i in indices]))
        assert y.tolist() == [ds[i][1].item() for i in indices] and x.is_shared()
    with pytest.raises(IndexError, match="index 50 is out of bounds for dimension 0 with size 50"):
        list(DataLoader(ds, batch_sampler=[[1, 2], [50]], num_workers=2))


def test_consecutive_rows_travel_as_ranges_and_match_the_main_process(leaves_nothing_behind):
    rows = np.arange(47 * 6, dtype=np.float32).reshape(47, 2, 3)
    contiguous = TensorDataset(torch.from_numpy(rows), torch.arange(47), torch.arange(47.0).double())
    strided = TensorDataset(torch.from_numpy(rows).transpose(1, 2), torch.arange(47))  # rows not one block each
    gatherers = [RowGatherer.for_fetcher(create_fetcher("map", ds, True, default_collate, False), WorkerBlocks(2))
                 for ds in (contiguous, strided)]
    assert gatherers[0].sources is not None and gatherers[1].sources is None, "one memmove per array: one block each"
    for ds in [contiguous, strided]:
        for kwargs in [dict(batch_size=10), dict(batch_size=10, drop_last=True), dict(batch_size=47)]:
            in_main = list(DataLoader(ds, **kwargs))
            with_workers = list(DataLoader(ds, num_workers=2, **kwargs))
            assert len(with_workers) == len(in_main)
            for got, expected in zip(with_workers, in_main):
                assert [t.dtype for t in got] == [t.dtype for t in expected] and got[0].is_shared()
                for g, e in zip(got, expected):
                    np.testing.assert_array_equal(g.numpy(), e.numpy())
    ranges = [range(0, 5), range(40, 47), range(-3, 0), range(0, 9, 2), range(7, 7)]  # user batches of ranges
    for got, indices in zip(DataLoader(contiguous, batch_sampler=ranges, num_workers=2), ranges):
        np.testing.assert_array_equal(got[0].numpy(), rows[list(indices)])
        assert got[1].tolist() == [i % 47 for i in indices]
    with pytest.raises(IndexError, match="index 47 is out of bounds for dimension 0 with size 47"):
        list(DataLoader(contiguous, batch_sampler=[range(40, 48)], num_workers=2))


def test_a_task_payload_reads_back_as_its_message():
    from scriptc.utils.data._utils.worker import _read_task, task_payload

    as_header = [(range(256, 512), []), (range(3, 3), [4, 1])]  # consecutive indices from 0 up
    pickled = [(range(0, 9, 2), [7]), (range(-2, 3), []), (range(1 << 62, 1 << 64), []), ([5, -1, 2], [0, 1]), (7, [])]
    for index, freed in as_header + pickled:
        payload = task_payload(12, index, freed)
        assert payload[:1] == (b"R" if (index, freed) in as_header else pickle.PROTO)
        assert _read_task(payload) == ("task", 12, index, tuple(freed) if payload[:1] == b"R" else freed)


class Growing(Dataset):
    """Samples that grow: each batch needs a bigger block than the ones before."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return torch.full((1000 * (i + 1),), float(i)), i


def test_blocks_too_small_for_later_batches_are_retired(leaves_nothing_behind):
    iterator = iter(DataLoader(Growing(), batch_size=1, num_workers=2))
    for x, i in iterator:
        assert x.shape == (1, 1000 * (i.item() + 1)) and (x == float(i.item())).all().item()
    assert all(len(blocks.mappings) <= 4 for blocks in iterator._blocks), "outgrown blocks are unmapped"
    del iterator, x, i


def test_batches_of_a_tensor_dataset_go_to_the_least_busy_worker():
    ds = _rows()
    assert _batches_independent_of_worker(DataLoader(ds, num_workers=2))
    assert _batches_independent_of_worker(DataLoader(torch.utils.data.random_split(ds, [50, 50])[0], num_workers=2))
    assert not _batches_independent_of_worker(DataLoader(ds, num_workers=2, worker_init_fn=_record_worker))
    assert not _batches_independent_of_worker(DataLoader(ds, num_workers=2, collate_fn=_tuple_of_fields))
    assert not _batches_independent_of_worker(DataLoader(Samples(), num_workers=2))


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods(method):
    def ids(workers):
        return _ids(DataLoader(_rows(40), batch_size=8, shuffle=True, num_workers=workers,
                               multiprocessing_context=method if workers else None,
                               generator=torch.Generator().manual_seed(3)))

    expected = ids(0)
    assert ids(1) == expected  # also starts the start method's own helper processes, once
    gc.collect()
    fds = _open_fds()
    assert ids(2) == expected
    gc.collect()
    assert multiprocessing.active_children() == [] and _open_fds() == fds and _named_shared_memory() == []


_DIES_WITH_WORKERS = """
import os, signal, sys
import scriptc as torch
from scriptc.utils.data import DataLoader, TensorDataset
iterator = iter(DataLoader(TensorDataset(torch.arange(100)), batch_size=5, num_workers=2))
next(iterator)
print(" ".join(str(w.pid) for w in iterator._workers), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_exit_when_the_main_process_dies():
    main = subprocess.run([sys.executable, "-c", _DIES_WITH_WORKERS], capture_output=True, text=True, timeout=120)
    pids = [int(p) for p in main.stdout.split()]
    assert len(pids) == 2, main.stderr
    deadline = time.monotonic() + 60
    while any(os.path.exists(f"/proc/{pid}") and "zombie" not in _state(pid) for pid in pids):
        assert time.monotonic() < deadline, "workers outlived their main process"
        time.sleep(0.05)  # polling the process table: the workers' exit is not ours to wait on


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(line for line in fh if line.startswith("State:")).lower()
    except (FileNotFoundError, StopIteration):
        return "zombie"


# --- the rings between the main process and its workers ------------------------------------------

def test_a_slow_worker_holds_back_only_its_own_batches_when_unordered(leaves_nothing_behind):
    gate = multiprocessing.get_context("fork").Event()
    iterator = iter(DataLoader(Gated(gate, {0}, 12), batch_size=1, num_workers=2, in_order=False,
                               multiprocessing_context="fork"))
    early = [next(iterator).item() for _ in range(3)]  # worker 0 is stuck on sample 0 meanwhile
    assert 0 not in early
    gate.set()
    assert sorted(early + [batch.item() for batch in iterator]) == list(range(12))
    del iterator


def test_in_order_batches_wait_for_the_slow_worker(leaves_nothing_behind):
    gate = multiprocessing.get_context("fork").Event()
    opener = threading.Timer(0.2, gate.set)  # worker 1 runs ahead as far as it may meanwhile
    opener.start()
    try:
        loader = DataLoader(Gated(gate, {0}, 12), batch_size=1, num_workers=2, prefetch_factor=1,
                            multiprocessing_context="fork")
        assert [b.item() for b in loader] == list(range(12))
    finally:
        opener.join()


class ExitsAt(Dataset):
    """A worker process that exits (as a crash would) when it reaches sample `at`."""

    def __init__(self, at):
        self.at = at

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == self.at:
            os._exit(3)
        return torch.tensor([i])


def test_a_worker_that_dies_mid_epoch_is_an_error_with_its_exit_code(leaves_nothing_behind):
    iterator = iter(DataLoader(ExitsAt(21), batch_size=2, num_workers=2))
    received = []
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly: the worker "
                                           "exited with code 3"):
        for batch in iterator:
            received.extend(batch.flatten().tolist())
    assert received == list(range(len(received))) and len(received) <= 20, "batches before the crash, in order"
    del iterator


def test_workers_exit_on_their_own_once_the_sampler_runs_out(leaves_nothing_behind):
    iterator = iter(DataLoader(_rows(40), batch_size=4, num_workers=2))
    batches = [next(iterator) for _ in range(10)]  # every batch, not yet the end of the epoch
    for process in iterator._workers:
        process.join(60)
        assert process.exitcode == 0, "told there are no more tasks, a worker exits after its last batch"
    with pytest.raises(StopIteration):
        next(iterator)  # an exit the worker was told to make is not a death
    assert [y.tolist() for _, y in batches] == [list(range(i, i + 4)) for i in range(0, 40, 4)]
    del iterator, batches


def test_a_batch_held_while_hundreds_more_arrive_keeps_its_values(leaves_nothing_behind):
    ds = _rows(2000, 6)
    iterator = iter(DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=1))
    held = [next(iterator) for _ in range(3)]
    count = sum(1 for _ in iterator)
    assert count == 497
    for x, y in held:
        np.testing.assert_array_equal(x.numpy(), ds.tensors[0].numpy()[y.numpy()])
    del iterator, held


def test_messages_too_big_for_a_ring_slot_travel_on_the_channel(leaves_nothing_behind):
    ds = _rows(5000, 2)
    big = [list(range(start, start + 2500)) for start in (0, 2500)]  # a task of ~10 KB pickled
    batches = list(DataLoader(ds, batch_sampler=big, num_workers=2, collate_fn=_copy_out))
    assert [b[0][:, 1].tolist() for b in batches] == [[2 * i + 1.0 for i in indices] for indices in big]
    assert batches[1][1] == "x" * 100_000


def test_the_next_epochs_workers_write_into_the_last_ones_blocks(leaves_nothing_behind):
    ds = _rows(600, 16)
    loader = DataLoader(ds, batch_size=20, num_workers=2, multiprocessing_context="fork")

    def check(batches):
        for x, y in batches:
            np.testing.assert_array_equal(x.numpy(), ds.tensors[0].numpy()[y.numpy()])

    first = iter(loader)
    held = next(first)  # held across the epochs: its block must not be handed on while it lives
    check(first)
    spares = list(loader._spare_blocks.mappings)
    assert spares, "the finished iterator's idle blocks are kept for the next one"
    second = iter(loader)
    assert {id(m) for blocks in second._blocks for m in blocks.mappings.values()} == {id(m) for m in spares}
    check(second)
    check([held])
    assert len(loader._spare_blocks.mappings) <= (2 + 2) * 2
    del first, second, held, spares


def test_a_loader_keeps_no_more_spare_memory_than_its_bound():
    from scriptc.multiprocessing.shared_memory import allocate
    from scriptc.utils.data._utils.shared_batches import _SPARE_BYTES, SpareBlocks

    spares = SpareBlocks()
    spares.hand_out(2, 100)
    big = [allocate(_SPARE_BYTES // 3) for _ in range(4)]
    for mapping in big:
        spares.keep(mapping)
    assert len(spares.mappings) == 3 and spares.nbytes <= _SPARE_BYTES
    assert [len(share) for share in spares.hand_out(2, 1)] == [2, 1] and spares.mappings == []
    spares.keep(big[0])
    spares.keep(big[1])
    assert spares.mappings == [big[0]], "at most `limit` blocks"
    del big, spares
