"""The dynamically quantized RNN cells against torch 2.13's: outputs, default states, printing, state_dict,
scripting, errors."""

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

CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"})]


def _pair(kind, **kwargs):
    torch.manual_seed(0)
    float_torch = torch.nn.Sequential(getattr(torch.nn, kind)(6, 5, **kwargs))
    float_scriptc = nn.Sequential(getattr(nn, kind)(6, 5, **kwargs))
    float_scriptc.load_state_dict({k: scriptc.tensor(v.detach().numpy()) for k, v in float_torch.state_dict().items()})
    return (scriptc.ao.quantization.quantize_dynamic(float_scriptc, dtype=scriptc.qint8)[0],
            torch.ao.quantization.quantize_dynamic(float_torch, dtype=torch.qint8)[0])


def _flat(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("kind, kwargs", CELLS)
def test_steps_match_torch(kind, kwargs):
    ours, theirs = _pair(kind, **kwargs)
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    h = rng.standard_normal((3, 5)).astype(np.float32)
    state = (((scriptc.tensor(h), scriptc.tensor(h)),), ((torch.tensor(h), torch.tensor(h)),)) \
        if kind == "LSTMCell" else ((scriptc.tensor(h),), (torch.tensor(h),))
    for ours_out, theirs_out in ((ours(scriptc.tensor(x), *state[0]), theirs(torch.tensor(x), *state[1])),
                                 (ours(scriptc.tensor(x)), theirs(torch.tensor(x)))):
        for a, b in zip(_flat(ours_out), _flat(theirs_out)):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=0, atol=1e-6)


def test_state_dict_round_trip_and_script():
    ours, _ = _pair("LSTMCell")
    assert list(ours.state_dict()) == ["_packed_weight_ih", "_packed_weight_hh"]
    buffer = io.BytesIO()
    scriptc.save(ours.state_dict(), buffer)
    buffer.seek(0)
    fresh = scriptc.ao.nn.quantized.dynamic.LSTMCell(6, 5)
    fresh.load_state_dict(scriptc.load(buffer))
    x = scriptc.randn(2, 6)
    np.testing.assert_array_equal(fresh(x)[0].numpy(), ours(x)[0].numpy())
    scripted = scriptc.jit.script(ours)
    np.testing.assert_array_equal(scripted(x)[1].numpy(), ours(x)[1].numpy())


def test_input_errors_match_torch():
    ours, theirs = _pair("GRUCell")
    for model, lib in ((ours, scriptc), (theirs, torch)):
        with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4, expected 6"):
            model(lib.randn(2, 4))
        with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden batch size 3"):
            model(lib.randn(2, 6), lib.randn(3, 5))
