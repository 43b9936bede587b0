"""nn.utils.fusion against torch 2.13: conv/conv-transpose/linear layers with an eval-mode BatchNorm
folded in give the fused weights torch gives, compute bn(layer(x)), and refuse what torch refuses."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.torch_errors import assert_misuse_like_torch

torch = pytest.importorskip("torch")

rng = np.random.default_rng(11)

LAYERS = {
    "conv2d": (lambda T: T.nn.Conv2d(3, 4, 3), lambda T: T.nn.BatchNorm2d(4), (2, 3, 6, 6), {}),
    "conv1d_no_bias": (lambda T: T.nn.Conv1d(3, 4, 3, bias=False), lambda T: T.nn.BatchNorm1d(4, affine=False),
                       (2, 3, 7), {}),
    "conv_transpose2d": (lambda T: T.nn.ConvTranspose2d(3, 4, 3), lambda T: T.nn.BatchNorm2d(4), (2, 3, 4, 4),
                         {"transpose": True}),
    "linear": (lambda T: T.nn.Linear(5, 4), lambda T: T.nn.BatchNorm1d(4), (3, 5), None),
    "linear_one_channel": (lambda T: T.nn.Linear(5, 4, bias=False), lambda T: T.nn.BatchNorm1d(1), (3, 1, 5), None),
}


def _state(module) -> dict:
    return {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) if v.is_floating_point() else v.numpy()
            for k, v in module.state_dict().items()}


def _build(T, name, states):
    make_layer, make_bn, _, _ = LAYERS[name]
    layer, bn = make_layer(T).eval(), make_bn(T).eval()
    layer.load_state_dict({k: T.tensor(v) for k, v in states[0].items()})
    bn.load_state_dict({k: T.tensor(np.abs(v) if k == "running_var" else v) for k, v in states[1].items()})
    return layer, bn


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_fused_layer_matches_torch_and_the_unfused_pair(name):
    make_layer, make_bn, shape, conv_options = LAYERS[name]
    states = (_state(make_layer(torch)), _state(make_bn(torch)))
    x = rng.standard_normal(shape).astype(np.float32)
    results = {}
    for T in (scriptc, torch):
        layer, bn = _build(T, name, states)
        if conv_options is None:
            fused = T.nn.utils.fuse_linear_bn_eval(layer, bn)
        else:
            fused = T.nn.utils.fusion.fuse_conv_bn_eval(layer, bn, **conv_options)
        assert type(fused) is type(layer) and fused is not layer
        assert isinstance(fused.weight, T.nn.Parameter) and isinstance(fused.bias, T.nn.Parameter)
        assert fused.weight.requires_grad
        unfused = bn(layer(T.tensor(x))).detach().numpy()
        out = fused(T.tensor(x)).detach().numpy()
        np.testing.assert_allclose(out, unfused, rtol=1e-4, atol=1e-4)
        results[T] = (fused.weight.detach().numpy(), fused.bias.detach().numpy(), out)
    for ours, theirs in zip(results[scriptc], results[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_weight_functions_keep_dtypes():
    for T in (scriptc, torch):
        weight, bias = T.nn.utils.fusion.fuse_conv_bn_weights(
            T.ones(2, 1, 1, 1, dtype=T.float64), None, T.zeros(2), T.ones(2), 1e-5, None, None)
        assert str(weight.dtype).endswith("float64") and str(bias.dtype).endswith("float64")
        weight, bias = T.nn.utils.fuse_linear_bn_weights(
            T.ones(2, 3), T.ones(2), T.zeros(2), T.ones(2) * 4, 0.0, T.ones(2), T.zeros(2))
        np.testing.assert_allclose(weight.detach().numpy(), np.full((2, 3), 0.5))
        np.testing.assert_allclose(bias.detach().numpy(), [0.5, 0.5])


def _misuses(T):
    return [
        lambda: T.nn.utils.fuse_conv_bn_eval(T.nn.Conv2d(1, 2, 1), T.nn.BatchNorm2d(2).eval()),
        lambda: T.nn.utils.fuse_linear_bn_eval(T.nn.Linear(1, 2).eval(), T.nn.BatchNorm1d(2)),
        lambda: T.nn.utils.fuse_linear_bn_eval(T.nn.Linear(1, 2).eval(), T.nn.BatchNorm1d(3).eval()),
        lambda: T.nn.utils.fuse_conv_bn_eval(T.nn.Conv2d(1, 2, 1).eval(),
                                             T.nn.BatchNorm2d(2, track_running_stats=False).eval()),
    ]


def test_misuse_raises_as_torch():
    assert_misuse_like_torch(_misuses(scriptc), _misuses(torch))
