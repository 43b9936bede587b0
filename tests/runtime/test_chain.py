"""The executor's batch-1 native chain (runtime/chain.py) against the usual plan and the reference."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter


def _plans(model, features: int, dtype=np.float32):
    example = torch.from_numpy(np.ones((2, features), dtype=dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    return Executor(graph, threads=2), Interpreter(graph)


class _Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(24, 24)
        self.b = torch.nn.Linear(24, 24)

    def forward(self, x):
        h = torch.relu(self.a(x)) + x  # an epilogue reading the graph's input beside its head
        return torch.nn.functional.gelu(self.b(h)) * h


@pytest.mark.parametrize("make, dtype", [
    (lambda: torch.nn.Sequential(torch.nn.Linear(40, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                 torch.nn.Tanh(), torch.nn.Linear(64, 7)), np.float32),
    (lambda: torch.nn.Sequential(torch.nn.Linear(40, 33), torch.nn.GELU(), torch.nn.Linear(33, 5),
                                 torch.nn.Softmax(dim=-1)), np.float64),
    (lambda: _Residual(), np.float32),
])
def test_batch_one_calls_run_as_one_native_program_with_the_usual_results(make, dtype):
    torch.manual_seed(0)
    model = make().to(torch.float64) if dtype == np.float64 else make()
    features = 24 if isinstance(model, _Residual) else 40
    executor, reference = _plans(model, features, dtype)
    assert executor.chain is not None
    rng = np.random.default_rng(1)
    results = []
    for batch in (1, 1, 1, 3, 1):
        x = rng.standard_normal((batch, features)).astype(dtype)
        (got,) = executor([x])
        (expected,) = reference.run([x])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        results.append((got, got.copy()))
    assert list(executor.chain._programs().values()) != [] and all(executor.chain._programs().values())
    for got, copy in results:  # results the caller kept were never written over
        np.testing.assert_array_equal(got, copy)


def test_the_chain_writes_a_new_result_while_the_caller_holds_the_last_one_or_a_view_of_it():
    torch.manual_seed(1)
    executor, reference = _plans(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                                     torch.nn.Linear(16, 4)), 8)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(4)]
    executor([xs[0]])
    first = executor([xs[0]])[0]
    view = executor([xs[1]])[0][0]
    third = executor([xs[2]])[0]
    assert not np.shares_memory(first, third) and not np.shares_memory(view, third)
    for x, got in ((xs[0], first), (xs[1], view[None]), (xs[2], third)):
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-6, atol=1e-6)
    transposed = np.asfortranarray(rng.standard_normal((8, 1)).astype(np.float32)).T  # not C-contiguous: usual plan
    np.testing.assert_allclose(executor([transposed])[0], reference.run([transposed])[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="same dtype"):  # as the reference: not the chain's to run
        executor([xs[3].astype(np.float64)])


def test_each_thread_has_its_own_program():
    torch.manual_seed(2)
    executor, reference = _plans(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                                     torch.nn.Linear(32, 3)), 16)
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x = rng.standard_normal((1, 16)).astype(np.float32)
            got = executor([x])[0].copy()
            if not np.allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-6):
                errors.append(seed)
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_graphs_that_are_not_a_chain_of_layers_have_none():
    torch.manual_seed(3)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 2))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(cnn.eval(), torch.randn(1, 3, 6, 6)), jit=False).graph
    assert Executor(graph).chain is None
    two = torch.jit.optimize_for_inference(torch.jit.trace(lambda x, y: torch.relu(x) + y,
                                                           (torch.randn(1, 4), torch.randn(1, 4))), jit=False).graph
    assert Executor(two).chain is None
    assert Executor(_plans(torch.nn.Sequential(torch.nn.Linear(4, 4)), 4)[0].graph, jit=False).chain is None
