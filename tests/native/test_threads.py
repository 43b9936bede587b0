"""The worker protocol of native/threads.py, driven on blocks of our own: a caller whose worker never
comes runs every chunk and closes the job; a worker that enters a job whose last chunks the caller
took runs only the rest; one that enters first runs its whole slice."""

import ctypes
import platform
import threading

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import threads
from scriptc.runtime.executor import Executor

pytestmark = pytest.mark.skipif(not threads.supported(), reason="native workers are Linux x86-64/aarch64 only")

_PARALLEL_FOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_void_p, ctypes.c_void_p)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@pytest.fixture(scope="module")
def add_one():
    """A compiled flat kernel computing out[i] = relu(x[i]) + 1: run in place on zeros, an index run
    twice shows as 2 and one never run as 0."""
    traced = torch.jit.trace(lambda x: torch.relu(x) + 1, torch.zeros(8))
    executor = Executor(torch.jit.optimize_for_inference(traced, jit=False).graph, threads=1)
    return executor.group_steps[0].kernel


class _Blocks:
    """`count` zeroed worker blocks, aligned as the pool aligns them."""

    def __init__(self, count: int):
        self.memory = ctypes.create_string_buffer(threads.BLOCK_BYTES * (count + 1))
        self.address = -(-ctypes.addressof(self.memory) // threads.BLOCK_BYTES) * threads.BLOCK_BYTES

    def field(self, worker: int, offset: int, type_):
        return type_.from_address(self.address + worker * threads.BLOCK_BYTES + offset)


def _in_place(n):
    x = np.zeros(n, np.float32)
    return x, (ctypes.c_void_p * 2)(x.ctypes.data, x.ctypes.data), (ctypes.c_int64 * 1)(0)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_caller_whose_workers_never_come_runs_every_chunk_and_closes_each_job(add_one, workers):
    parallel_for = _PARALLEL_FOR(threads.functions()["scriptc_parallel_for"])
    blocks = _Blocks(workers)
    for job, n in enumerate([workers + 1, 10, 97, 4096 + 3], start=1):
        x, ptrs, meta = _in_place(n)
        parallel_for(blocks.address, workers, add_one.address, n, ptrs, meta)
        np.testing.assert_array_equal(x, np.ones(n, np.float32))
        for w in range(workers):
            left = blocks.field(w, 64, ctypes.c_uint64).value
            assert left & 0xFFFFFFFF == left >> 32  # (no chunk left)
            assert blocks.field(w, 56, ctypes.c_int32).value == job  # closed: a worker waking now skips it
            assert blocks.field(w, 4, ctypes.c_int32).value == 0  # and no worker ran any of it


def _post(blocks, kernel, start, end, chunk, taken_from_back, ptrs, meta):
    """Write job 1 into worker 0's block as scriptc_parallel_for posts it, with the caller having
    taken `taken_from_back` chunks already."""
    count = -(-(end - start) // chunk)
    for offset, value in ((16, kernel.address), (24, start), (32, end), (40, ctypes.addressof(ptrs)),
                          (48, ctypes.addressof(meta)), (72, chunk), (80, count)):
        blocks.field(0, offset, ctypes.c_int64).value = value
    blocks.field(0, 64, ctypes.c_uint64).value = (count - taken_from_back) << 32
    blocks.field(0, 0, ctypes.c_int32).value = 1
    return count


def _run_worker_on(blocks):
    """Start a worker on block 0, wait for it to finish job 1, then stop it."""
    worker = threading.Thread(target=_WORKER(threads.functions()["scriptc_worker"]), args=(blocks.address,),
                              daemon=True)
    worker.start()
    done = blocks.field(0, 4, ctypes.c_int32)
    for _ in range(20000):
        if done.value == 1:
            break
        threading.Event().wait(0.001)
    blocks.field(0, 12, ctypes.c_int32).value = 1  # stop, then a job to see it with
    seq = blocks.field(0, 0, ctypes.c_int32)
    seq.value = 2
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(threads._SYS_FUTEX[platform.machine()], ctypes.c_void_p(ctypes.addressof(seq)),
                 threads._FUTEX_WAKE_PRIVATE, 1)
    worker.join(10)
    assert not worker.is_alive() and done.value == 1


@pytest.mark.parametrize("taken_from_back", [1, 5])
def test_a_worker_entering_after_the_caller_took_chunks_runs_only_the_rest(add_one, taken_from_back):
    blocks = _Blocks(1)
    x, ptrs, meta = _in_place(100)
    count = _post(blocks, add_one, 20, 100, 10, taken_from_back, ptrs, meta)
    _run_worker_on(blocks)
    ran = np.zeros(100, np.float32)
    ran[20:20 + 10 * (count - taken_from_back)] = 1
    np.testing.assert_array_equal(x, ran)
    left = blocks.field(0, 64, ctypes.c_uint64).value
    assert left & 0xFFFFFFFF == left >> 32 == count - taken_from_back


def test_a_worker_entering_first_takes_its_whole_slice_at_once(add_one):
    blocks = _Blocks(1)
    x, ptrs, meta = _in_place(100)
    count = _post(blocks, add_one, 20, 97, 10, 0, ptrs, meta)
    _run_worker_on(blocks)
    np.testing.assert_array_equal(x, np.r_[np.zeros(20), np.ones(77), np.zeros(3)].astype(np.float32))
    assert blocks.field(0, 64, ctypes.c_uint64).value == (count << 32) | count


def test_calls_whose_worker_is_late_equal_one_thread_bit_for_bit():
    """After an idle spell the worker is asleep and the caller takes its chunks until it comes: each
    kernel then runs on chunk boundaries, not on the slices a steady call runs, and must compute the
    same bits (a fused Linear + GELU and a Conv2d + LeakyReLU, at batches whose slices and chunks end
    mid-vector)."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.LeakyReLU(0.1), torch.nn.Flatten(),
                                torch.nn.Linear(16 * 12 * 12, 200), torch.nn.GELU(), torch.nn.Linear(200, 7)).eval()
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.zeros(4, 3, 12, 12)), jit=False).graph
    alone, split = Executor(graph, threads=1), Executor(graph, threads=2)
    rng = np.random.default_rng(6)
    for executor in (alone, split):  # (a first call runs the segment's steps, whose kernels may round otherwise)
        executor([np.zeros((2, 3, 12, 12), np.float32)])
    for batch in (4, 7, 13, 3, 13, 7):
        x = rng.standard_normal((batch, 3, 12, 12)).astype(np.float32)
        expected = alone([x])[0]
        for _ in range(3):
            threading.Event().wait(0.002)  # (far past the worker's spin: it sleeps when the call comes)
            np.testing.assert_array_equal(split([x])[0], expected)
        np.testing.assert_array_equal(split([x])[0], expected)  # (and back to back: the worker awake)
