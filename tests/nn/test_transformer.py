"""nn.TransformerEncoder's nested-tensor inference path as torch 2.13 takes it: zeros at padded positions
of an eval-mode, no-grad call with a left-aligned src_key_padding_mask, in eager and scripted code."""

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

_PAD = [[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]]
_NOT_LEFT_ALIGNED = [[False] * 5, [True] + [False] * 4, [False] * 4 + [True]]


def _encoders(layer_options=None, **encoder_options):
    """The same random encoder (eval mode) in both libraries."""
    layer_options = {"dropout": 0.0, "batch_first": True, **(layer_options or {})}
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, **layer_options), 2,
                                         norm=torch.nn.LayerNorm(8), **encoder_options).eval()
    ours = scriptc.nn.TransformerEncoder(scriptc.nn.TransformerEncoderLayer(8, 2, 16, **layer_options), 2,
                                         norm=scriptc.nn.LayerNorm(8), **encoder_options).eval()
    ours.load_state_dict({k: scriptc.from_numpy(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("case", ["no_grad", "grad", "not_left_aligned", "float_mask", "unbatched", "with_mask",
                                  "train", "seq_first", "disabled", "scripted", "scripted_grad"])
def test_padded_positions_match_torch(case):
    layer_options = {"batch_first": False} if case == "seq_first" else {}
    options = {"enable_nested_tensor": False} if case == "disabled" else {}
    ours, theirs = _encoders(layer_options, **options)
    src = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    pad = _NOT_LEFT_ALIGNED if case == "not_left_aligned" else _PAD

    def run(lib, model):
        if case == "train":
            model.train()
            for module in model.modules():
                if isinstance(module, lib.nn.Dropout):
                    module.p = 0.0
        if case.startswith("scripted"):
            model = lib.jit.script(model)
        x = lib.from_numpy(src.copy())
        mask = lib.tensor(pad)
        kwargs = {"src_key_padding_mask": mask.float() * -1e9 if case == "float_mask" else mask}
        if case == "seq_first":
            x = x.transpose(0, 1)
        if case == "unbatched":
            x, kwargs["src_key_padding_mask"] = x[1], mask[1]
        if case == "with_mask":
            kwargs["mask"] = lib.zeros(5, 5)
        if case in ("grad", "scripted_grad"):
            return model(x, **kwargs).detach().numpy()
        with lib.no_grad():
            return model(x, **kwargs).numpy()
    np.testing.assert_allclose(run(scriptc, ours), run(torch, theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layer_options", [{"norm_first": True}, {"batch_first": False}, {"nhead": 1},
                                           {"activation": "gelu"}, {"bias": False}])
def test_use_nested_tensor_and_its_warning_match_torch(layer_options):
    def build(lib):
        options = {"d_model": 8, "nhead": 2, "batch_first": True, **layer_options}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            encoder = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(**options), 1)
        return (encoder.use_nested_tensor, encoder.layers[0].activation_relu_or_gelu,
                [str(w.message) for w in caught if "nested" in str(w.message)])
    assert build(scriptc) == build(torch)
