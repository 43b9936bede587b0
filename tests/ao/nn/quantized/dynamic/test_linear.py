"""The dynamically quantized Linear against torch 2.13's (x86/fbgemm engine): weights, outputs, printing,
state_dict in both directions."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import scriptc
from scriptc import nn

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)


def _pair(in_features, out_features, bias=True, seed=0):
    torch.manual_seed(seed)
    float_torch = torch.nn.Sequential(torch.nn.Linear(in_features, out_features, bias=bias))
    float_scriptc = nn.Sequential(nn.Linear(in_features, out_features, bias=bias))
    float_scriptc.load_state_dict({k: scriptc.tensor(v.detach().numpy()) for k, v in float_torch.state_dict().items()})
    return (scriptc.ao.quantization.quantize_dynamic(float_scriptc, {nn.Linear}, dtype=scriptc.qint8),
            torch.ao.quantization.quantize_dynamic(float_torch, {torch.nn.Linear}, dtype=torch.qint8))


@pytest.mark.parametrize("shape, bias", [((5, 16), True), ((2, 7, 16), True), ((3, 16), False), ((0, 16), True)])
def test_outputs_match_torch(shape, bias):
    ours, theirs = _pair(16, 12, bias)
    assert np.array_equal(ours[0].weight().int_repr().numpy(), theirs[0].weight().int_repr().numpy())
    assert ours[0].weight().q_scale() == theirs[0].weight().q_scale()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected = theirs(torch.tensor(x)).detach().numpy()
    actual = ours(scriptc.tensor(x)).numpy()
    assert actual.shape == expected.shape and actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)


def test_large_reductions_stay_exact():
    """Past 2**24 the integer sums would round in float32: the product accumulates in float64 then."""
    ours, theirs = _pair(2000, 8, seed=3)
    x = np.random.default_rng(2).uniform(0, 4, (4, 2000)).astype(np.float32)
    np.testing.assert_allclose(ours(scriptc.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=0,
                               atol=1e-5)


def test_prints_as_torch():
    ours, theirs = _pair(4, 3)
    assert repr(ours) == repr(theirs)
    assert repr(ours[0].weight()) == repr(theirs[0].weight())


def test_state_dict_keys_and_values_match_torch():
    ours, theirs = _pair(4, 3)
    mine, reference = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(reference)
    weight, bias = mine["0._packed_params._packed_params"]
    their_weight, their_bias = reference["0._packed_params._packed_params"]
    assert np.array_equal(weight.int_repr().numpy(), their_weight.int_repr().numpy())
    np.testing.assert_array_equal(bias.detach().numpy(), their_bias.detach().numpy())
    assert mine["0._packed_params.dtype"] is scriptc.qint8
    assert float(mine["0.scale"]) == 1.0 and int(mine["0.zero_point"]) == 0


def test_a_state_dict_saved_by_torch_loads_here_and_back():
    ours, theirs = _pair(6, 5, seed=4)
    fresh, _ = _pair(6, 5, seed=5)
    buffer = io.BytesIO()
    torch.save(theirs.state_dict(), buffer)
    buffer.seek(0)
    fresh.load_state_dict(scriptc.load(buffer))
    x = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_array_equal(fresh(scriptc.tensor(x)).numpy(), ours(scriptc.tensor(x)).numpy())
    buffer = io.BytesIO()
    scriptc.save(fresh.state_dict(), buffer)
    buffer.seek(0)
    _, other = _pair(6, 5, seed=6)
    other.load_state_dict(torch.load(buffer))
    np.testing.assert_array_equal(other(torch.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy())


def test_saved_state_dict_shrinks():
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    quantized = scriptc.quantization.quantize_dynamic(model, {nn.Linear}, dtype=scriptc.qint8)
    sizes = []
    for m in (model, quantized):
        buffer = io.BytesIO()
        scriptc.save(m.state_dict(), buffer)
        sizes.append(buffer.getbuffer().nbytes)
    assert sizes[1] < sizes[0] / 3


def test_input_errors_match_torch():
    ours, theirs = _pair(4, 3)
    for make, message in ((lambda lib: lib.randn(2, 5), "The number of rows in the packB should be equal to K: 5"),
                          (lambda lib: lib.randn(2, 4, dtype=lib.float64), "expected scalar type Float but found Double"),
                          (lambda lib: lib.randn(4), "The dimension of input tensor should be larger than or equal to 2")):
        for model, lib in ((ours, scriptc), (theirs, torch)):
            with pytest.raises(RuntimeError, match=message):
                model(make(lib))


@pytest.mark.parametrize("compile_model", [lambda m, x: scriptc.jit.trace(m, x), lambda m, x: scriptc.jit.script(m)],
                         ids=["trace", "script"])
def test_traced_or_scripted_model_runs_saves_and_loads(compile_model, tmp_path):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    quantized = scriptc.quantization.quantize_dynamic(model, {nn.Linear}, dtype=scriptc.qint8)
    x, other = scriptc.randn(3, 8), scriptc.randn(5, 8)
    compiled = compile_model(quantized, x)
    assert "quantized_linear_dynamic" in str(compiled.graph)
    np.testing.assert_array_equal(compiled(other).numpy(), quantized(other).numpy())
    compiled.save(str(tmp_path / "quantized.sc"))
    loaded = scriptc.runtime.load(str(tmp_path / "quantized.sc"))
    np.testing.assert_allclose(np.asarray(loaded(other.numpy())), quantized(other).numpy(), rtol=0, atol=1e-6)
    frozen = scriptc.jit.optimize_for_inference(scriptc.jit.freeze(scriptc.jit.script(quantized)))
    np.testing.assert_array_equal(frozen(other).numpy(), quantized(other).numpy())
