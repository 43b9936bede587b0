"""The thread pool: every index of a split range runs exactly once, from any thread, after sleep and fork."""

import ctypes
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import pool as pool_module
from scriptc.runtime.executor import Executor
from scriptc.runtime.pool import ThreadPool


@pytest.fixture(scope="module")
def add_one():
    """A compiled flat kernel computing out[i] = relu(x[i]) + 1; run in place on zeros, an index run twice shows as +2."""
    traced = torch.jit.trace(lambda x: torch.relu(x) + 1, torch.zeros(8))
    executor = Executor(torch.jit.optimize_for_inference(traced, jit=False).graph, threads=1)
    return executor.group_steps[0].kernel


def split_in_place(pool, kernel, n):
    x = np.zeros(n, np.float32)
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, x.ctypes.data)
    pool.split(kernel, n, ptrs, (ctypes.c_int64 * 1)(0))
    return x


@pytest.mark.parametrize("size", [2, 3, 8])
def test_every_index_runs_exactly_once(add_one, size):
    pool = ThreadPool(size)
    rng = np.random.default_rng(size)
    for n in [0, 1, 2, 3, 7, 64, 1000] + list(rng.integers(0, 50000, 300)):
        np.testing.assert_array_equal(split_in_place(pool, add_one, int(n)), np.ones(int(n), np.float32))


def test_sleeping_workers_wake_for_the_next_job(add_one):
    pool = ThreadPool(2)
    for _ in range(3):
        time.sleep(0.05)  # far past the workers' spin: they are asleep in futex
        np.testing.assert_array_equal(split_in_place(pool, add_one, 100000), np.ones(100000, np.float32))


def test_concurrent_callers_all_get_their_answer(add_one):
    pool = ThreadPool(2)
    failures = []

    def caller(seed):
        for n in np.random.default_rng(seed).integers(1, 20000, 200):
            if not (split_in_place(pool, add_one, int(n)) == 1).all():
                failures.append(n)

    threads = [threading.Thread(target=caller, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and failures == []


@pytest.mark.parametrize("size", [1, 2, 3])
def test_run_slices_covers_the_range_once_on_the_pools_threads(size):
    pool = ThreadPool(size)
    for n in (0, 1, 2, 5, 100):
        seen, slices = np.zeros(n, np.int64), []

        def mark(start, end):
            slices.append((start, end, threading.current_thread().name))
            seen[start:end] += 1

        pool.run_slices(mark, n)
        np.testing.assert_array_equal(seen, np.ones(n, np.int64))
        assert len(slices) == max(1, min(size, n))
        assert [name for start, _, name in slices if start == 0] == ["MainThread"]


def test_run_slices_raises_a_slices_error_after_every_slice_has_ended():
    pool = ThreadPool(2)
    finished = []

    def work(start, end):
        if start == 0:
            raise ValueError("slice 0 failed")
        time.sleep(0.05)
        finished.append(start)

    with pytest.raises(ValueError, match="slice 0 failed"):
        pool.run_slices(work, 4)
    assert finished == [2]


@pytest.mark.skipif(pool_module._native is None, reason="native workers are Linux-only")
def test_a_forked_child_starts_its_own_workers(add_one):
    pool = ThreadPool(2)
    split_in_place(pool, add_one, 100000)  # the parent's workers are running
    pid = os.fork()
    if pid == 0:
        ok = (split_in_place(pool, add_one, 100000) == 1).all()
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    pytest.fail("the forked child hung on the pool")


def test_a_process_with_running_workers_exits_at_once():
    script = ("import numpy as np, scriptc as torch\n"
              "m = torch.jit.optimize_for_inference(torch.jit.trace(lambda x: torch.tanh(x) * 2, torch.zeros(8)))\n"
              "x = torch.ones(1 << 20)\n"
              "assert abs(float(m(x).sum()) - 2 * np.tanh(1.0) * (1 << 20)) < 1e-2 * (1 << 20)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


@pytest.mark.skipif(pool_module._native is None, reason="no native workers on this platform")
def test_a_plan_with_compiled_kernels_starts_the_workers_its_splits_use():
    """So that a first split, whenever it comes (a wider batch, a bigger product), compiles nothing.
    (In a new process: the workers are the process's.)"""
    script = (f"import sys; sys.path.insert(0, {os.getcwd()!r})\n"
              "import scriptc as torch\n"
              "from scriptc.runtime import pool\n"
              "from scriptc.runtime.executor import Executor\n"
              "graph = torch.jit.optimize_for_inference(torch.jit.trace(lambda x: torch.relu(x) + 1, torch.zeros(8)),"
              " jit=False).graph\n"
              "Executor(graph, threads=1)\n"
              "print(pool._native.started)\n"
              "Executor(graph, threads=3)\n"
              "print(pool._native.started)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "2"]


@pytest.mark.skipif(pool_module._native is None, reason="no native workers on this platform")
def test_started_workers_run_their_native_loop_before_the_pool_is_used():
    """A worker thread needs the GIL once before its native loop, and a caller that keeps calling
    compiled code (load priming a model) never let it in: start_workers returns with each worker in
    its loop - asleep there or having run a job - read at once, the GIL never released in between.
    (In a new process: the workers are the process's.)"""
    script = (f"import sys; sys.path.insert(0, {os.getcwd()!r})\n"
              "import ctypes\n"
              "from scriptc.native import threads\n"
              "from scriptc.runtime import pool\n"
              "pool.ThreadPool(3).start_workers()\n"
              "blocks = [pool._native.blocks + threads.BLOCK_BYTES * i for i in range(pool._native.started)]\n"
              "print(pool._native.started, all(ctypes.c_int32.from_address(b + threads.SLEEPING_AT).value or\n"
              "                                ctypes.c_int32.from_address(b + threads.DONE_AT).value for b in blocks))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "True"]


_PINNING = """
import ctypes, os, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import scriptc as torch
from scriptc.native import threads
from scriptc.runtime import pool
from scriptc.runtime.executor import Executor

kernel = Executor(torch.jit.optimize_for_inference(torch.jit.trace(lambda x: torch.relu(x) + 1, torch.zeros(8)),
                                                   jit=False).graph, threads=1).group_steps[0].kernel
workers = pool.ThreadPool({size})

def split():
    x = np.zeros(100000, np.float32)
    workers.split(kernel, x.size, (ctypes.c_void_p * 2)(x.ctypes.data, x.ctypes.data), (ctypes.c_int64 * 1)(0))
    assert (x == 1).all()
    kept_off = ctypes.c_int32.from_address(pool._native.state_address + threads.KEPT_OFF_AT).value
    return kept_off, [sorted(os.sched_getaffinity(t.native_id)) for t in pool._native._threads]

{body}
"""


def _pinning(body: str, size: int = 2) -> list[str]:
    """Run `body` after _PINNING's set-up in a new process (the workers and the affinity masks it
    changes are the process's); its printed lines."""
    script = _PINNING.format(root=os.getcwd(), size=size, body=body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          timeout=120).stdout.split("\n")[:-1]


_needs_two_cpus = pytest.mark.skipif(pool_module._native is None or len(os.sched_getaffinity(0)) < 2,
                                     reason="native workers and two CPUs to keep them apart")


@_needs_two_cpus
@pytest.mark.parametrize("size", [2, 3])
def test_a_split_keeps_the_workers_off_its_callers_cpu_within_the_callers_mask(size):
    """A woken worker placed on its caller's CPU ran none of a first call's jobs: each worker may run
    anywhere the caller may, but on the CPU the caller is on."""
    lines = _pinning("mask = os.sched_getaffinity(0)\n"
                     "kept_off, masks = split()\n"
                     "print(kept_off in mask, all(m == sorted(mask - {kept_off}) for m in masks), len(masks))", size)
    assert lines == ["True True " + str(size - 1)]


@_needs_two_cpus
def test_a_caller_that_moves_onto_the_workers_cpu_moves_them_off_it():
    lines = _pinning("mask = os.sched_getaffinity(0)\n"
                     "first, _ = split()\n"
                     "for _ in range(20):  # (the scheduler may move the caller back before its split: try again)\n"
                     "    time.sleep(threads.REPIN_INTERVAL_NS / 1e9)  # (workers re-pinned since are left alone)\n"
                     "    os.sched_setaffinity(0, mask - {first})\n"
                     "    os.sched_setaffinity(0, mask)\n"
                     "    kept_off, masks = split()\n"
                     "    if kept_off != first:\n"
                     "        break\n"
                     "print(kept_off != first, masks == [sorted(mask - {kept_off})])")
    assert lines == ["True True"]


@_needs_two_cpus
def test_a_one_cpu_mask_leaves_the_workers_where_they_are():
    """A user who confines the caller to one CPU gets no pinning: the workers keep the mask they
    inherited (never one outside the user's), and every split still gets its answer."""
    lines = _pinning("cpu = min(os.sched_getaffinity(0))\n"
                     "os.sched_setaffinity(0, {cpu})\n"
                     "for _ in range(3):\n"
                     "    kept_off, masks = split()\n"
                     "print(masks == [[cpu]])")
    assert lines == ["True"]


@_needs_two_cpus
def test_a_forked_childs_splits_never_move_the_parents_workers(add_one):
    """The child's old programs still hold the parent's pool state, whose thread ids are the parent's."""
    lines = _pinning("mask = os.sched_getaffinity(0)\n"
                     "kept_off, before = split()\n"
                     "address, blocks = pool._native.state_address, pool._native.blocks\n"
                     "pid = os.fork()\n"
                     "if pid == 0:  # (the child on another CPU than the one the parent's workers are kept off)\n"
                     "    os.sched_setaffinity(0, mask - {kept_off})\n"
                     "    os.sched_setaffinity(0, mask)\n"
                     "    x = np.zeros(100000, np.float32)\n"
                     "    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,\n"
                     "                            ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)\n"
                     "    call(threads.functions()['scriptc_split'])(blocks, 1, address, kernel.address, x.size,\n"
                     "        (ctypes.c_void_p * 2)(x.ctypes.data, x.ctypes.data), (ctypes.c_int64 * 1)(0))\n"
                     "    os._exit(0 if (x == 1).all() else 1)\n"
                     "_, status = os.waitpid(pid, 0)\n"
                     "print(os.waitstatus_to_exitcode(status), [sorted(os.sched_getaffinity(t.native_id))\n"
                     "                                          for t in pool._native._threads] == before)")
    assert lines == ["0 True"]
