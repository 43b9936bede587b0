"""torch.jit.freeze as torch 2.13 behaves: frozen modules' results, forward and preserved methods,
and its errors for what it does not freeze."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _counter(engine):
    class Counter(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = engine.ones(3) * 2
            self.count = 0

        def forward(self, x):
            return x * self.w

        @engine.jit.export
        def bump(self, x):
            self.count += 1
            return x + self.count

    return Counter()


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_a_frozen_module_keeps_forward_and_its_preserved_methods(engine):
    frozen = engine.jit.freeze(engine.jit.script(_counter(engine)).eval(), preserved_attrs=["bump"])
    x = engine.ones(3)
    assert frozen.forward(x).tolist() == frozen(x).tolist() == [2.0, 2.0, 2.0]
    assert frozen.bump(x).tolist() == [2.0, 2.0, 2.0] and frozen.bump(x).tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_freeze_refuses_a_training_module_and_an_unscripted_one(engine):
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        engine.jit.freeze(engine.jit.script(engine.nn.Linear(2, 2)))
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        engine.jit.freeze(engine.nn.Linear(2, 2).eval())


def _forking(engine):
    class Inner(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = engine.ones(2, 2)  # a plain attribute of the submodule, not a buffer

        def forward(self, x):
            return x * 3 + self.offset

    class Outer(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            future = engine.jit._fork(self.inner.forward, x)
            return engine.jit._wait(future) + self.inner(x)

    return Outer()


def test_forking_a_submodule_method_reads_that_submodule_scripted_and_frozen():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    expected = _forking(torch)(torch.from_numpy(x)).numpy()
    scripted = scriptc.jit.script(_forking(scriptc)).eval()
    np.testing.assert_allclose(scripted(scriptc.from_numpy(x)).numpy(), expected)
    np.testing.assert_allclose(scriptc.jit.freeze(scripted)(scriptc.from_numpy(x)).numpy(), expected)
