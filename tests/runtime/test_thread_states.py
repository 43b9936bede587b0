"""Per-thread program states (runtime/segments.py): a loaded model's first call on a thread other than
the loading one - a server's worker - takes a state made ahead at load, or makes its own; either way
its results are the loading thread's and no thread writes what another reads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import load as runtime_load
from scriptc.runtime import model as model_module
from scriptc.runtime import segments
from scriptc.runtime.executor import Executor


def _mlp():
    torch.manual_seed(4)
    return torch.nn.Sequential(torch.nn.Linear(20, 48), torch.nn.ReLU(), torch.nn.Linear(48, 48), torch.nn.Tanh(),
                               torch.nn.Linear(48, 5)).eval()


@pytest.fixture
def mlp_and_loaded(tmp_path):
    mlp = _mlp()
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(mlp, torch.randn(2, 20)), path)
    return mlp, runtime_load(path, threads=1)


def _eager(mlp, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return mlp(torch.from_numpy(x)).numpy()


def _programs(model) -> list[segments.Program]:
    runner = model.runners["forward"]
    executors = [runner] if isinstance(runner, Executor) else [runner.generic, runner.special]
    return [program for executor in executors if isinstance(executor, Executor)
            for step in executor.segment_steps for program in step.programs.values() if program is not None]


def _in_thread(function, *args):
    result = []
    thread = threading.Thread(target=lambda: result.append(function(*args)))
    thread.start()
    thread.join()
    return result[0]


def test_load_makes_states_ahead_and_a_new_threads_first_call_takes_one_and_equals_eager(mlp_and_loaded):
    mlp, model = mlp_and_loaded
    programs = _programs(model)
    assert programs and all(len(p._spares) == model_module.PREPARED_THREADS for p in programs)
    rng = np.random.default_rng(5)
    for batch in (1, 3):  # (1 was primed; 3 was not)
        x = rng.standard_normal((batch, 20)).astype(np.float32)
        got = _in_thread(model, x)
        np.testing.assert_allclose(got, _eager(mlp, x), rtol=1e-5, atol=1e-6)
        mine = model(x)
        np.testing.assert_array_equal(got, mine)  # the loading thread's result, bit for bit
        assert not np.shares_memory(got, mine)
    assert all(len(p._spares) == model_module.PREPARED_THREADS - 2 for p in programs)


def test_threads_starting_together_get_states_of_their_own_and_the_loading_threads_results(mlp_and_loaded):
    mlp, model = mlp_and_loaded
    programs = _programs(model)
    first_frames = [bytes(p.first_frame) for p in programs]
    count = 16  # (more than the states made ahead: the others make theirs)
    rng = np.random.default_rng(6)
    inputs = [rng.standard_normal((1 + i % 5, 20)).astype(np.float32) for i in range(count)]
    expected = [model(x).copy() for x in inputs]
    results: list = [None] * count
    states: list = [None] * count
    start = threading.Barrier(count)

    def work(i):
        start.wait()
        firsts = model(inputs[i]).copy()
        for _ in range(30):
            results[i] = model(inputs[i]).copy()
        states[i] = [p._local.state for p in programs]
        assert np.array_equal(firsts, results[i])
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, got, want in zip(inputs, results, expected):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got, _eager(mlp, x), rtol=1e-5, atol=1e-6)
    assert all(len(p._spares) == 0 for p in programs)
    for k in range(len(programs)):
        per_thread = [s[k] for s in states]
        assert len({id(s) for s in per_thread}) == count
        memories = [m for s in per_thread for m in [s.scratch] + [a.memory for a in s.outs]]
        assert len({id(m) for m in memories}) == len(memories)
        assert all(not np.shares_memory(a, b) for i, a in enumerate(memories) for b in memories[i + 1:])
        assert len({id(s.frame) for s in per_thread}) == count
    assert [bytes(p.first_frame) for p in programs] == first_frames  # read by every thread, written by none


def test_no_state_is_made_ahead_for_arenas_past_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "SPARE_STATE_BYTES", 0)
    path = tmp_path / "mlp.sc"
    mlp = _mlp()
    torch.jit.save(torch.jit.trace(mlp, torch.randn(2, 20)), path)
    model = runtime_load(path, threads=1)
    programs = _programs(model)
    assert programs and all(p._spares == [] for p in programs)
    x = np.random.default_rng(7).standard_normal((2, 20)).astype(np.float32)
    np.testing.assert_array_equal(_in_thread(model, x), model(x))
