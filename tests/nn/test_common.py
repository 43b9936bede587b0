"""scriptc/nn/common.py against torch 2.13: torch.nn.modules.utils' tuple normalizers (_single ...
_quadruple), eagerly and as TorchScript's builtins in scripted code; layers built with a negative size
raise torch's RuntimeError; layers built on the meta device, materialized with to_empty or a state_dict."""

from typing import List, Tuple

import numpy as np

import pytest

import scriptc
from tests.torch_errors import raised


def _normalized(lib):
    utils = lib.nn.modules.utils

    def normalize(size: List[int], triple: Tuple[int, int, int], side: int):
        return utils._pair(size), utils._triple(triple), utils._single(size), utils._quadruple(side)

    return normalize


def test_tuple_normalizers_in_scripted_code_match_torch():
    torch = pytest.importorskip("torch")
    args = ([3, 4], (1, 2, 3), 5)
    ours = scriptc.jit.script(_normalized(scriptc))(*args)
    assert ours == torch.jit.script(_normalized(torch))(*args)
    assert ours == ([3, 4], [1, 2, 3], [3, 4], [5, 5, 5, 5])
    assert _normalized(scriptc)(*args) == ((3, 4), (1, 2, 3), (3, 4), (5, 5, 5, 5))


@pytest.mark.parametrize("build", [
    lambda nn: nn.Linear(-1, 3),
    lambda nn: nn.Linear(3, -2),
    lambda nn: nn.Embedding(-1, 3),
    lambda nn: nn.LayerNorm(-1),
    lambda nn: nn.BatchNorm2d(-1),
])
def test_a_negative_size_raises_torchs_error(build):
    torch = pytest.importorskip("torch")
    expected = raised(lambda: build(torch.nn))
    assert expected is not None and expected[0] is RuntimeError
    assert raised(lambda: build(scriptc.nn)) == expected


def _built_on_meta(lib):
    """Layers built under `with device("meta")` and with device="meta": each parameter's and buffer's
    place, shape and dtype, and a forward pass's result on meta inputs."""
    nn = lib.nn
    with lib.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(8, 10), nn.LayerNorm(10))
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2)
        lstm = nn.LSTM(8, 16, 2, batch_first=True)
    layers = [nn.Embedding(100, 16, device="meta"), nn.GroupNorm(2, 8, device="meta"), nn.PReLU(device="meta"),
              nn.MultiheadAttention(16, 4, device="meta"), nn.Bilinear(3, 4, 5, device="meta"),
              nn.GRUCell(4, 6, device="meta"), nn.Linear(2, 2, device="meta", dtype=lib.float64)]
    state = [(name, t.device.type, tuple(t.shape), str(t.dtype)) for m in (model, encoder, lstm, *layers)
             for name, t in m.state_dict().items()]
    outputs = [model(lib.empty(2, 3, 8, 8, device="meta")), encoder(lib.empty(2, 5, 16, device="meta")),
               lstm(lib.empty(2, 5, 8, device="meta"))[0]]
    return state, [repr(out) for out in outputs], sum(p.numel() for p in encoder.parameters())


def test_layers_built_on_the_meta_device_match_torch():
    torch = pytest.importorskip("torch")
    assert _built_on_meta(scriptc) == _built_on_meta(torch)


def test_a_meta_model_materializes_with_to_empty_and_reset_parameters():
    with scriptc.device("meta"):
        model = scriptc.nn.Sequential(scriptc.nn.Linear(4, 3), scriptc.nn.BatchNorm1d(3))
    weight = model[0].weight
    assert model.to_empty(device="cpu") is model and model[0].weight is weight and not weight.is_meta
    for layer in model:
        layer.reset_parameters()
    assert model[1].running_var.tolist() == [1.0, 1.0, 1.0]
    assert float(weight.abs().max()) <= 0.5  # (kaiming_uniform_'s bound for 4 inputs)
    assert model(scriptc.ones(2, 4)).shape == (2, 3)


def test_a_meta_model_adopts_a_state_dict_with_assign():
    torch = pytest.importorskip("torch")
    source = scriptc.nn.Linear(4, 3)
    with scriptc.device("meta"):
        model = scriptc.nn.Linear(4, 3)
    with pytest.warns(UserWarning, match="copying from a non-meta parameter in the checkpoint to a meta parameter"):
        model.load_state_dict(source.state_dict())  # (a no-op, as torch's: the parameters stay meta)
    assert model.weight.is_meta
    model.load_state_dict(source.state_dict(), assign=True)
    assert isinstance(model.weight, scriptc.nn.Parameter) and model.weight.requires_grad and not model.weight.is_meta
    np.testing.assert_array_equal(model(scriptc.ones(1, 4)).detach().numpy(), source(scriptc.ones(1, 4)).detach().numpy())
    reference = torch.nn.Linear(4, 3, device="meta")
    assert repr(scriptc.nn.utils.skip_init(scriptc.nn.Linear, 4, 3, device="meta").weight) == repr(reference.weight)
    assert repr(scriptc.nn.Linear(4, 3).to("meta").weight) == repr(torch.nn.Linear(4, 3).to("meta").weight)
