"""spawn / start_processes: every process runs fn(i, *args); failures come back as torch words them."""

from __future__ import annotations

import os
import signal
import sys

import pytest

import scriptc as torch
import scriptc.multiprocessing as mp


def _record_rank(rank, results):
    results[rank] = rank + 10


def _raise_in_one(rank):
    if rank == 1:
        raise ValueError("rank one failed")


def _exit_with(rank, code):
    sys.exit(code)


def _kill_self(rank):
    os.kill(os.getpid(), signal.SIGKILL)


def test_spawn_runs_fn_with_the_process_index():
    results = torch.zeros(2, dtype=torch.int64).share_memory_()
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        assert mp.spawn(_record_rank, args=(results,), nprocs=2, start_method="fork") is None  # spawns anyway
    assert results.tolist() == [10, 11]


def test_a_raising_process_is_reported_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="(?s)-- Process 1 terminated with the following error:\n"
                                                        ".*ValueError: rank one failed") as info:
        mp.start_processes(_raise_in_one, nprocs=2, start_method="fork")
    assert info.value.error_index == 1 and info.value.error_pid > 0


def test_exit_codes_and_signals_are_reported():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_with, args=(3,), nprocs=1, start_method="fork")
    assert info.value.exit_code == 3
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGKILL") as info:
        mp.start_processes(_kill_self, nprocs=1, start_method="fork")
    assert info.value.signal_name == "SIGKILL"


def test_join_false_returns_the_context():
    results = torch.zeros(2, dtype=torch.int64).share_memory_()
    context = mp.start_processes(_record_rank, args=(results,), nprocs=2, join=False, start_method="fork")
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    while not context.join(timeout=60):
        pass
    assert results.tolist() == [10, 11]
