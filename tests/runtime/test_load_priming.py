"""runtime.load's priming: the batches it runs a model at on zeros, and what a user cannot see of it."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import load as runtime_load
from scriptc.runtime import model as model_module

from ..models import ALL, make_inputs


def _traced_cnn(tmp_path, batch: int):
    path = tmp_path / "cnn.sc"
    torch.manual_seed(0)
    torch.jit.save(torch.jit.trace(ALL["CNN"]().eval(), make_inputs("CNN", batch)), path)
    return path


def _primed_batches(path, monkeypatch) -> list[int]:
    batches = []
    real = model_module.RuntimeModel.run_method
    monkeypatch.setattr(model_module.RuntimeModel, "run_method",
                        lambda self, name, *inputs: batches.append(inputs[0].shape[0]) or real(self, name, *inputs))
    runtime_load(path)
    return batches


def test_load_runs_the_traced_batch_once_when_its_call_is_cheap(tmp_path, monkeypatch):
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 10.0)  # (room for every call on a busy machine)
    monkeypatch.setattr(model_module, "WIDE_PRIMING_BATCH", 4)
    batches = _primed_batches(_traced_cnn(tmp_path, 7), monkeypatch)
    assert batches.count(7) == 1
    # after batches 2 and 1 and the wide one, before 2 and 1 again (the last ones run are small)
    at = batches.index(7)
    assert set(batches[:at]) == {2, 1, 4} and batches[at - 1] == 4 and set(batches[at + 1:]) == {2, 1}


def test_load_skips_the_traced_batch_when_its_call_would_cost_more_than_allowed(tmp_path, monkeypatch):
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 10.0)
    monkeypatch.setattr(model_module, "EXAMPLE_PRIMING_BUDGETS", 0.0)
    assert 7 not in _primed_batches(_traced_cnn(tmp_path, 7), monkeypatch)
    # (a traced batch that priming runs anyway is not run again)
    monkeypatch.setattr(model_module, "EXAMPLE_PRIMING_BUDGETS", 2.5)
    batches = _primed_batches(_traced_cnn(tmp_path, 2), monkeypatch)
    assert batches.count(2) == 2 * model_module.PRIMING_CALLS


def test_the_estimate_of_a_call_at_a_batch_grows_by_the_cost_of_a_row():
    estimate = model_module._call_estimate  # (the fastest batch-1 call, the fastest batch-2 call, a batch)
    assert estimate(1.0, 1.5, 1) == 1.0
    assert estimate(1.0, 1.5, 9) == 5.0
    assert estimate(1.0, 0.9, 16) == 1.0  # (a batch-2 call that came out faster: rows cost nothing)


class _Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        return h + torch.randn_like(h) * 0.5


def test_priming_leaves_the_default_generator_where_it_was(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "noisy.sc"
    torch.jit.trace(_Noisy().eval(), (torch.randn(4, 8),), check_trace=False).save(path)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    results = []
    for prime in (False, True):
        torch.manual_seed(3)
        model = runtime_load(path, prime=prime)
        results.append((model(x), torch.randn(2)))
    # (the same draws: the compiled call may round its last bit unlike the interpreted first one)
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(results[0][1].numpy(), results[1][1].numpy())


def test_load_primes_a_traced_cnn_at_the_height_and_width_it_was_traced_at(tmp_path, monkeypatch):
    path = tmp_path / "cnn.sc"
    torch.manual_seed(0)
    torch.jit.save(torch.jit.trace(ALL["CNN"]().eval(), torch.randn(3, 3, 10, 14)), path)
    shapes = []
    real = model_module.RuntimeModel.run_method
    monkeypatch.setattr(model_module.RuntimeModel, "run_method",
                        lambda self, name, *inputs: shapes.append(inputs[0].shape) or real(self, name, *inputs))
    model = runtime_load(path)
    # only the batch changes between the priming calls: the spatial dims S1, S2 stay as traced
    assert shapes and {shape[1:] for shape in shapes} == {(3, 10, 14)} and {s[0] for s in shapes} >= {1, 2}
    assert model.example_sizes["forward"] == {"S1": 10, "S2": 14}


class _Halving(torch.nn.Module):
    def forward(self, x):
        while bool(x.abs().sum() > 1.0):  # on zeros this would stop at once, but nothing says so
            x = x / 2
        return x


class _Repeated(torch.nn.Module):
    def forward(self, x):
        for _ in range(x.size(0)):  # (a count the graph keeps: no pass unrolls it)
            x = x * 0.5 + 1.0
        return x


def test_load_primes_a_graph_with_a_for_loop_but_not_one_with_a_while_loop(tmp_path, monkeypatch):
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 10.0)
    for module, primed in ((_Repeated(), True), (_Halving(), False)):
        path = tmp_path / f"{type(module).__name__}.sc"
        torch.jit.script(module, example_inputs=[(torch.randn(2, 3),)]).save(str(path))
        assert bool(_primed_batches(path, monkeypatch)) == primed
        monkeypatch.undo()
        monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 10.0)


def test_batches_never_seen_compile_nothing_make_no_program_and_equal_eager(tmp_path):
    """A first call at a batch no call brought before (one more than the traced batch, three times
    it, past every batch priming ran) runs the program load already has: no compile, no new
    program, the arenas grown where it needs more, and eager's results."""
    from scriptc.codegen.llvm.driver import STATS

    path = _traced_cnn(tmp_path, 4)
    torch.manual_seed(0)
    eager = ALL["CNN"]().eval()  # (the module _traced_cnn traced: the same seed)
    model = runtime_load(path)
    whole = model.runners["forward"].whole
    programs = dict(whole.programs)
    compiles = STATS.compiles
    for batch in (5, 12, 3, 70):
        x = make_inputs("CNN", batch)
        got = model(x.numpy())
        with torch.no_grad():
            np.testing.assert_allclose(got, eager(x).numpy(), rtol=1e-4, atol=1e-5)
    assert STATS.compiles == compiles
    assert whole.programs == programs


def test_priming_runs_numpys_blas_on_the_loading_thread_alone_and_puts_its_thread_count_back(tmp_path, monkeypatch):
    """(Its threads, once given work, spin ~90 ms after it: on the CPU the pool's worker needs for the
    first real call.)"""
    from scriptc.native.blas import single_threaded

    blas = single_threaded()
    if blas is None:
        pytest.skip("numpy's BLAS is not a known OpenBLAS")
    path = _traced_cnn(tmp_path, 2)
    counts = []
    real = model_module.RuntimeModel.run_method
    monkeypatch.setattr(model_module.RuntimeModel, "run_method",
                        lambda self, name, *inputs: counts.append(blas._get()) or real(self, name, *inputs))
    before = blas._get()
    blas._set(2)
    try:
        runtime_load(path, threads=2)
        after = blas._get()
    finally:
        blas._set(before)
    assert counts and set(counts) == {1}
    assert after == 2
