"""The dynamically quantized LSTM and GRU against torch 2.13's: layers, directions, batch_first, packed
sequences, initial states, printing, state_dict round trip, tracing and scripting."""

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


def _pair(kind="LSTM", **kwargs):
    torch.manual_seed(0)
    float_torch = torch.nn.Sequential(getattr(torch.nn, kind)(6, 5, **kwargs))
    float_scriptc = nn.Sequential(getattr(nn, kind)(6, 5, **kwargs))
    float_scriptc.load_state_dict({k: scriptc.tensor(v.detach().numpy()) for k, v in float_torch.state_dict().items()})
    return (scriptc.ao.quantization.quantize_dynamic(float_scriptc, {getattr(nn, kind)}, dtype=scriptc.qint8)[0],
            torch.ao.quantization.quantize_dynamic(float_torch, {getattr(torch.nn, kind)}, dtype=torch.qint8)[0])


def _states(result):
    """(output, h_n, c_n) of an LSTM, (output, h_n) of a GRU."""
    output, hidden = result
    return (output, *hidden) if isinstance(hidden, tuple) else (output, hidden)


def _close(actual, expected):
    np.testing.assert_allclose(actual.numpy(), expected.detach().numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 2}, {"bidirectional": True, "num_layers": 2},
                                    {"batch_first": True}])
def test_outputs_match_torch(kind, kwargs):
    ours, theirs = _pair(kind, **kwargs)
    x = np.random.default_rng(1).standard_normal((4, 3, 6)).astype(np.float32)
    for a, b in zip(_states(ours(scriptc.tensor(x))), _states(theirs(torch.tensor(x)))):
        _close(a, b)


def test_initial_state_matches_torch():
    ours, theirs = _pair(num_layers=2)
    rng = np.random.default_rng(2)
    x, h0, c0 = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 2, 6), (2, 2, 5), (2, 2, 5)))
    out, (h, c) = ours(scriptc.tensor(x), (scriptc.tensor(h0), scriptc.tensor(c0)))
    t_out, (t_h, t_c) = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    for a, b in ((out, t_out), (h, t_h), (c, t_c)):
        _close(a, b)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_sequence_matches_torch(kind):
    ours, theirs = _pair(kind, bidirectional=True)
    x = np.random.default_rng(3).standard_normal((5, 3, 6)).astype(np.float32)
    lengths = [5, 2, 4]
    packed = nn.utils.rnn.pack_padded_sequence(scriptc.tensor(x), lengths, enforce_sorted=False)
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False)
    actual, expected = _states(ours(packed)), _states(theirs(t_packed))
    _close(actual[0].data, expected[0].data)
    for a, b in zip(actual[1:], expected[1:]):
        _close(a, b)


def test_gru_initial_state_matches_torch():
    ours, theirs = _pair("GRU", num_layers=2)
    rng = np.random.default_rng(4)
    x, h0 = rng.standard_normal((3, 2, 6)).astype(np.float32), rng.standard_normal((2, 2, 5)).astype(np.float32)
    for a, b in zip(_states(ours(scriptc.tensor(x), scriptc.tensor(h0))),
                    _states(theirs(torch.tensor(x), torch.tensor(h0)))):
        _close(a, b)
    for model, lib in ((ours, scriptc), (theirs, torch)):
        with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 5\), got \[1, 2, 5\]"):
            model(lib.tensor(x), lib.zeros(1, 2, 5))


def test_prints_as_torch():
    for kind in ("LSTM", "GRU"):
        for kwargs in ({}, {"num_layers": 2, "bidirectional": True, "batch_first": True, "dropout": 0.25}):
            ours, theirs = _pair(kind, **kwargs)
            assert repr(ours) == repr(theirs)


def test_state_dict_round_trip_through_a_file():
    ours, _ = _pair(num_layers=2)
    buffer = io.BytesIO()
    scriptc.save(ours.state_dict(), buffer)
    buffer.seek(0)
    fresh = scriptc.ao.nn.quantized.dynamic.LSTM(6, 5, num_layers=2)
    fresh.load_state_dict(scriptc.load(buffer))
    x = scriptc.randn(3, 2, 6)
    np.testing.assert_array_equal(fresh(x)[0].numpy(), ours(x)[0].numpy())


def test_an_lstm_without_bias_is_refused_as_torch_refuses_it():
    for lib in (scriptc, torch):
        with pytest.raises(AssertionError, match="mod.bias must be True"):
            lib.ao.quantization.quantize_dynamic(lib.nn.Sequential(lib.nn.LSTM(2, 2, bias=False)), {lib.nn.LSTM})


def test_input_errors_match_torch():
    ours, theirs = _pair()
    for shape, message in (((3, 6), "input must have 3 dimensions, got 2"),
                           ((3, 2, 4), "input.size\\(-1\\) must be equal to input_size. Expected 6, got 4")):
        for model, lib in ((ours, scriptc), (theirs, torch)):
            with pytest.raises(RuntimeError, match=message):
                model(lib.randn(*shape))


class _WordModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(30, 6)
        self.rnn = nn.LSTM(6, 5, 2)
        self.gru = nn.GRU(5, 5, bidirectional=True)
        self.decoder = nn.Linear(10, 30)

    def forward(self, tokens, hidden: tuple[scriptc.Tensor, scriptc.Tensor]):
        output, hidden = self.rnn(self.encoder(tokens), hidden)
        output, _ = self.gru(output)
        return self.decoder(output), hidden


@pytest.mark.parametrize("compile_model", [lambda m, x, h: scriptc.jit.trace(m, (x, h)),
                                           lambda m, x, h: scriptc.jit.script(m)], ids=["trace", "script"])
def test_traced_or_scripted_word_model_runs_at_other_lengths_and_loads(compile_model, tmp_path):
    quantized = scriptc.quantization.quantize_dynamic(_WordModel().eval(), {nn.Linear, nn.LSTM, nn.GRU})
    x, h = scriptc.randint(0, 30, (4, 2)), (scriptc.zeros(2, 2, 5), scriptc.zeros(2, 2, 5))
    compiled = compile_model(quantized, x, h)
    other, other_h = scriptc.randint(0, 30, (7, 3)), (scriptc.randn(2, 3, 5), scriptc.randn(2, 3, 5))
    expected, (h_n, c_n) = quantized(other, other_h)
    actual, (h_c, c_c) = compiled(other, other_h)
    for a, b in ((actual, expected), (h_c, h_n), (c_c, c_n)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    compiled.save(str(tmp_path / "word.sc"))
    loaded = scriptc.runtime.load(str(tmp_path / "word.sc"))
    out = loaded(other.numpy(), (other_h[0].numpy(), other_h[1].numpy()))
    np.testing.assert_allclose(np.asarray(out[0]), expected.numpy(), rtol=0, atol=1e-6)
