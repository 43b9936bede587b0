"""quantize_dynamic: which submodules it swaps (as torch's does), qconfigs, and what it refuses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from scriptc import nn
from scriptc.ao.nn.quantized import dynamic as nnqd
from scriptc.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.rnn = nn.LSTM(8, 8)
        self.attention = nn.MultiheadAttention(8, 2)
        self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, tokens):
        x, _ = self.rnn(self.embed(tokens))
        x, _ = self.attention(x, x, x)
        return self.head(x)


def test_swaps_linear_and_lstm_submodules_and_leaves_the_original_alone():
    model = Tagger()
    quantized = quantize_dynamic(model, {nn.Linear, nn.LSTM}, dtype=scriptc.qint8)
    assert type(quantized.rnn) is nnqd.LSTM and type(quantized.head[0]) is nnqd.Linear
    assert type(quantized.head[2]) is nnqd.Linear and type(quantized.embed) is nn.Embedding
    # MultiheadAttention's out_proj is a NonDynamicallyQuantizableLinear: left float, as in torch
    assert type(quantized.attention.out_proj) is not nnqd.Linear
    assert type(model.head[0]) is nn.Linear and not quantized.training
    assert not any(hasattr(m, "qconfig") for m in quantized.modules())
    tokens = scriptc.randint(0, 20, (5, 2))
    assert quantized(tokens).shape == (5, 2, 3)


def test_the_model_itself_is_not_swapped():
    linear = nn.Linear(3, 3)
    assert type(quantize_dynamic(linear)) is nn.Linear


def test_names_pick_submodules_and_inplace_mutates():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    same = quantize_dynamic(model, {"1"}, inplace=True)
    assert same is model and type(model[0]) is nn.Linear and type(model[1]) is nnqd.Linear


def test_per_channel_qconfig_quantizes_each_output_channel():
    torch = pytest.importorskip("torch")
    from torch.ao.quantization import per_channel_dynamic_qconfig as torch_per_channel

    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(6, 4))
    model = nn.Sequential(nn.Linear(6, 4))
    model.load_state_dict({k: scriptc.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    ours = quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig})
    theirs = torch.ao.quantization.quantize_dynamic(reference, {torch.nn.Linear: torch_per_channel})
    assert repr(ours) == repr(theirs)
    np.testing.assert_array_equal(ours[0].weight().int_repr().numpy(), theirs[0].weight().int_repr().numpy())
    np.testing.assert_array_equal(ours[0].weight().q_per_channel_scales().numpy(),
                                  theirs[0].weight().q_per_channel_scales().numpy())
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(ours(scriptc.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-6)


def test_torch_quantization_is_the_same_namespace():
    assert scriptc.quantization.quantize_dynamic is quantize_dynamic
    assert scriptc.nn.quantized.dynamic.Linear is nnqd.Linear


@pytest.mark.parametrize("module, spec, dtype, error, message", [
    (nn.Sequential(nn.Linear(3, 3)), {nn.Linear}, scriptc.float16, NotImplementedError, "float16"),
    (nn.Sequential(nn.Embedding(3, 3)), None, scriptc.quint8, NotImplementedError, "quint8"),
    (nn.Sequential(nn.Linear(3, 3)), None, scriptc.float32, ValueError, "Don't know how to quantize with default "
     "settings for torch.float32"),
    (nn.Sequential(nn.Linear(3, 3)), {nn.Linear}, scriptc.float32, RuntimeError, "Unknown dtype specified for "
     "quantize_dynamic"),
])
def test_what_is_not_supported_says_so(module, spec, dtype, error, message):
    with pytest.raises(error, match=message):
        quantize_dynamic(module, spec, dtype=dtype)


def test_static_quantization_is_refused():
    with pytest.raises(NotImplementedError, match="static quantization"):
        scriptc.ao.quantization.prepare(nn.Sequential(nn.Linear(2, 2)))
