"""A traced module's submodules read as traced modules of their own, as torch's do
(`traced_cell.dg.code` in the TorchScript tutorial)."""

import numpy as np
import pytest

import scriptc
from scriptc.testing import assert_close
from tests.jit.test_trace_scripted_calls import _gate

torch = pytest.importorskip("torch")


def _cell(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = lib.nn.Linear(4, 4)
            self.norm = lib.nn.BatchNorm1d(4)

        def forward(self, x):
            return lib.nn.functional.dropout(self.norm(self.linear(x)), 0.5, self.training)

    class Cell(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.dg = _gate(lib)
            self.block = Block()

        def forward(self, x, h):
            return self.dg(self.block(x)) * h

    return Cell()


def _trace(lib, model, x, h):
    with pytest.warns(Warning):
        return lib.jit.trace(model, (x, h), check_trace=False)


def test_called_submodules_are_script_modules_with_code_like_torchs():
    values = np.random.rand(2, 3, 4).astype(np.float32)
    for lib in (scriptc, torch):
        model = _cell(lib).eval()
        traced = _trace(lib, model, lib.from_numpy(values[0]), lib.from_numpy(values[1]))
        for child in (traced.dg, traced.block, traced.block.linear, traced.block.norm):
            assert isinstance(child, lib.jit.ScriptModule)
            assert "def forward" in child.code


def test_a_traced_child_computes_what_it_did_in_the_trace():
    model = _cell(scriptc).eval()
    traced = _trace(scriptc, model, scriptc.rand(3, 4), scriptc.rand(3, 4))
    x = scriptc.randn(5, 4)
    with scriptc.no_grad():
        assert_close(traced.block(x), model.block(x))
        assert_close(traced.block.linear(x), model.block.linear(x))
        assert traced.dg is traced.dg


def test_reading_a_traced_child_changes_no_state_and_draws_no_random_numbers():
    model = _cell(scriptc).train()
    traced = _trace(scriptc, model, scriptc.rand(3, 4), scriptc.rand(3, 4))
    stats = {k: v.clone() for k, v in model.state_dict().items()}
    rng = scriptc.get_rng_state()
    assert "def forward" in traced.block.code
    for key, value in model.state_dict().items():
        assert_close(value, stats[key])
    assert bool((scriptc.get_rng_state() == rng).all())
