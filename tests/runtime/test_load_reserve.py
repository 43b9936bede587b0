"""runtime.load sizes a program's arenas for the batch the archive was traced at, without running it."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ArchiveError
from scriptc.native import program as native
from scriptc.runtime import load as runtime_load
from scriptc.runtime import model as model_module

from ..models import ALL, make_inputs


def _manifest(path) -> dict:
    return json.loads(zipfile.ZipFile(path).read("manifest.json"))


def _traced_cnn(tmp_path, batch: int):
    path = tmp_path / "cnn.sc"
    torch.manual_seed(0)
    torch.jit.save(torch.jit.trace(ALL["CNN"]().eval(), make_inputs("CNN", batch)), path)
    return path


def _program_state(model):
    program = next(p for p in model.runners["forward"].whole.programs.values() if p is not None)
    return program, program._local.state


def test_trace_saves_the_examples_batch(tmp_path):
    path = _traced_cnn(tmp_path, 7)
    assert _manifest(path)["methods"]["forward"]["example_batch"] == 7
    traced = torch.jit.trace(lambda x: x * 2.0, torch.randn(5, 3))
    assert traced.example_batch == 5
    traced.save(tmp_path / "fn.sc")
    assert _manifest(tmp_path / "fn.sc")["methods"]["forward"]["example_batch"] == 5
    scripted = torch.jit.script(ALL["MLP"]().eval())
    scripted.save(tmp_path / "scripted.sc")
    assert "example_batch" not in _manifest(tmp_path / "scripted.sc")["methods"]["forward"]


def test_load_sizes_the_arenas_for_the_traced_batch_without_running_it(tmp_path, monkeypatch):
    # (No time for priming past two calls at batches 2 and 1: the traced batch is never run at load.)
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 0.0)
    path = _traced_cnn(tmp_path, 24)
    model = runtime_load(path)
    _, state = _program_state(model)
    scratch, out = state.scratch, state.out
    assert state.frame[native.CAPACITY[native.SCRATCH]] > state.frame[native.NEED[native.SCRATCH]] > 0
    x = np.random.default_rng(0).standard_normal((24, 3, 12, 12)).astype(np.float32)
    expected = runtime_load(path, prime=False, jit=False)(x)
    np.testing.assert_allclose(model(x), expected, rtol=1e-5, atol=1e-6)
    assert state.scratch is scratch and state.out is out  # the first call at batch 24 grew nothing
    unprimed = runtime_load(path, prime=False)
    np.testing.assert_allclose(unprimed(x), expected, rtol=1e-5, atol=1e-6)
    # Sizes it was not sized for, below and above, still agree with the interpreter.
    for batch in (1, 5, 31):
        y = np.random.default_rng(batch).standard_normal((batch, 3, 12, 12)).astype(np.float32)
        np.testing.assert_allclose(model(y), runtime_load(path, prime=False, jit=False)(y), rtol=1e-5, atol=1e-6)


def test_reserve_computes_nothing_and_respects_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 0.0)
    model = runtime_load(_traced_cnn(tmp_path, 2))
    program, state = _program_state(model)
    x = np.random.default_rng(0).standard_normal((2, 3, 12, 12)).astype(np.float32)
    held = model(x)  # (a result the caller keeps: it lives in the out arena the frame points at)
    kept = held.copy()
    assert program.reserve([np.ones_like(x)], 1 << 30) == 0  # (it fits: nothing grows)
    np.testing.assert_array_equal(held, kept)  # and no kernel wrote the out arena
    wide = [np.ones((64, 3, 12, 12), np.float32)]
    assert program.reserve(wide, 0) == 0 and state.frame[native.CAPACITY[native.SCRATCH]] == state.scratch.size - (
        state.frame[native.BASE_ADDRESS[native.SCRATCH]] - state.scratch.ctypes.data)
    np.testing.assert_array_equal(held, kept)
    assert program.reserve(wide, 1 << 30) > 0
    assert state.frame[native.CAPACITY[native.SCRATCH]] >= state.frame[native.NEED[native.SCRATCH]]
    np.testing.assert_array_equal(held, kept)


@pytest.mark.parametrize("value", [0, -3, 1.5, "16", True, model_module.MAX_EXAMPLE_BATCH + 1])
def test_a_bad_example_batch_is_an_archive_error(value, tmp_path):
    path = _traced_cnn(tmp_path, 2)
    manifest = _manifest(path)
    manifest["methods"]["forward"]["example_batch"] = value
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(manifest) if name == "manifest.json" else source.read(name))
    with pytest.raises(ArchiveError, match="example_batch"):
        runtime_load(io.BytesIO(buffer.getvalue()))



def test_trace_saves_the_examples_sizes_in_their_other_dynamic_dims(tmp_path):
    torch.manual_seed(0)
    torch.jit.save(torch.jit.trace(ALL["CNN"]().eval(), torch.randn(2, 3, 10, 14)), tmp_path / "cnn.sc")
    entry = _manifest(tmp_path / "cnn.sc")["methods"]["forward"]
    assert entry["example_batch"] == 2 and entry["example_sizes"] == {"S1": 10, "S2": 14}


@pytest.mark.parametrize("value", [[3], {"S1": 0}, {"S1": "16"}, {"S1": True}, {"S1": 1.5},
                                   {f"S{i}": 2 for i in range(model_module.MAX_EXAMPLE_SIZES + 1)}])
def test_bad_example_sizes_are_an_archive_error(value, tmp_path):
    path = _traced_cnn(tmp_path, 2)
    manifest = _manifest(path)
    manifest["methods"]["forward"]["example_sizes"] = value
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(manifest) if name == "manifest.json" else source.read(name))
    with pytest.raises(ArchiveError, match="example_sizes"):
        runtime_load(io.BytesIO(buffer.getvalue()))
