"""Input dims beyond their types: the dims a trace baked in are refused naming what baked them, by
the traced module, the optimized one and runtime.load's model alike (the reason travels in the
archive); dims a trace named by one symbol must agree in size; trace_module checks each method."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ArchiveError
from scriptc.runtime import load as runtime_load

from .test_hostile_archives import member, rewrite


class _Pairs(torch.nn.Module):
    """Unpacks dim 1 of `x` into two halves (baking in its size 2); `mask` only sums."""

    def forward(self, x, mask):
        first, second = x.unbind(1)
        return first * second + mask.sum(1)

    def pairs(self, x):
        first, second = x.unbind(1)
        return first - second


class _Stacked(torch.nn.Module):
    """Concatenates its inputs along dim 0: eager runs with any two row counts."""

    def forward(self, x, y):
        return torch.cat([x, y]).sum(0)


def _traced_pairs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return torch.jit.trace(_Pairs(), (torch.randn(5, 2), torch.randn(5, 3)))


BAKED = (r"forward\(\): input 'x' expects size 2 in dim 1, which the trace baked in \(unbind, whose 2 results "
         r"the trace unpacked at test_input_dims.py:\d+:\d+; .*\), got size 3")


def test_a_baked_dim_is_refused_naming_what_baked_it_traced_optimized_and_loaded(tmp_path):
    traced = _traced_pairs()
    x, mask = torch.randn(7, 2), torch.randn(7, 4)
    expected = _Pairs()(x, mask).numpy()
    path = str(tmp_path / "pairs.sc")
    traced.save(path)
    optimized = torch.jit.optimize_for_inference(traced)
    optimized_path = str(tmp_path / "optimized.sc")
    optimized.save(optimized_path)
    for model in (traced, optimized):
        np.testing.assert_allclose(model(x, mask).numpy(), expected, rtol=1e-5, atol=1e-6)
        with pytest.raises(torch.SignatureError, match=BAKED):
            model(torch.randn(7, 3), mask)
    for saved in (path, optimized_path):
        loaded = runtime_load(saved)
        np.testing.assert_allclose(loaded(x.numpy(), mask.numpy()), expected, rtol=1e-5, atol=1e-6)
        with pytest.raises(torch.SignatureError, match=BAKED):
            loaded(np.zeros((7, 3), np.float32), mask.numpy())
        with pytest.raises(torch.SignatureError, match=BAKED):  # by name, through the slow path
            loaded(x=[[0.0] * 3] * 7, mask=mask.numpy())


def test_trace_module_refuses_each_methods_baked_dims():
    traced = torch.jit.trace_module(_Pairs(), {"forward": (torch.randn(5, 2), torch.randn(5, 3)),
                                               "pairs": torch.randn(4, 2)})
    x = torch.randn(6, 2)
    np.testing.assert_allclose(traced.pairs(x).numpy(), _Pairs().pairs(x).numpy())
    with pytest.raises(torch.SignatureError, match=BAKED):
        traced(torch.randn(5, 3), torch.randn(5, 3))
    with pytest.raises(torch.SignatureError, match=r"pairs\(\): input 'x' expects size 2 in dim 1, which the "
                       r"trace baked in"):
        traced.pairs(torch.randn(4, 3))


SHARED = (r"forward\(\): input 'y' expects size 4 in dim 0, the size of input 'x' in dim 0 \(the trace saw them "
          r"equal and named both B; .*\), got size 5")


def test_dims_a_trace_named_by_one_symbol_must_agree_traced_optimized_and_loaded(tmp_path):
    traced = torch.jit.trace(_Stacked(), (torch.randn(4, 3), torch.randn(4, 3)))
    path = str(tmp_path / "stacked.sc")
    traced.save(path)
    loaded = runtime_load(path)
    x, y = torch.randn(6, 5), torch.randn(6, 5)
    expected = _Stacked()(x, y).numpy()
    for model in (traced, torch.jit.optimize_for_inference(traced)):
        np.testing.assert_allclose(model(x, y).numpy(), expected, rtol=1e-5)
        with pytest.raises(torch.SignatureError, match=SHARED):
            model(torch.randn(4, 3), torch.randn(5, 3))
    np.testing.assert_allclose(loaded(x.numpy(), y.numpy()), expected, rtol=1e-5)
    with pytest.raises(torch.SignatureError, match=SHARED):
        loaded(np.zeros((4, 3), np.float32), np.zeros((5, 3), np.float32))
    with pytest.raises(torch.SignatureError, match=SHARED):
        loaded(np.zeros((4, 3), np.float32), [[0.0] * 3] * 5)


@pytest.mark.parametrize("entry, message", [
    ("not a list", ": expected a list, got str"),
    ([{"input": 2, "dim": 1, "size": 2, "why": "x"}], r"\[0\]: expected \{input: an input's position below 2"),
    ([{"input": 0, "dim": -1, "size": 2, "why": "x"}], r"\[0\]: expected"),
    ([{"input": 0, "dim": 1, "size": 2}], r"\[0\]: expected"),
    ([{"input": 0, "dim": 1, "size": 2, "why": "x" * 5000}], r"\[0\]: expected"),
])
def test_a_malformed_baked_dims_entry_is_an_archive_error(tmp_path, entry, message):
    path = tmp_path / "pairs.sc"
    _traced_pairs().save(str(path))
    data = path.read_bytes()
    manifest = json.loads(member(data, "manifest.json"))
    assert manifest["methods"]["forward"]["baked_dims"][0]["size"] == 2
    manifest["methods"]["forward"]["baked_dims"] = entry
    bad = rewrite(data, tmp_path / "bad.sc", {"manifest.json": json.dumps(manifest).encode()})
    with pytest.raises(ArchiveError, match=r"manifest.json: methods.forward.baked_dims" + message):
        runtime_load(bad)


def test_a_traced_functions_optimized_archive_keeps_its_baked_dims(tmp_path):
    def per_step(x):
        return torch.stack([step * 2 for step in x.unbind(0)])

    optimized = torch.jit.optimize_for_inference(torch.jit.trace(per_step, torch.randn(3, 4)))
    path = str(tmp_path / "per_step.sc")
    optimized.save(path)
    loaded = runtime_load(path)
    x = torch.randn(3, 6)
    np.testing.assert_allclose(loaded(x.numpy()), per_step(x).numpy())
    for model, given in ((optimized, torch.randn(5, 4)), (loaded, np.zeros((5, 4), np.float32))):
        with pytest.raises(torch.SignatureError, match=r"forward\(\): input 'x' expects size 3 in dim 0, which the "
                           r"trace baked in \(unbind, whose 3 results"):
            model(given)
