"""Convolution layers against torch: every padding mode and padding string, stride, dilation, groups,
bias=False, transposed convolutions with output_padding and output_size, repr, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)

CONVS = [
    ("Conv1d", (4, 6, 3), {}, (2, 4, 9)),
    ("Conv1d", (4, 6, 4), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2, "bias": False}, (2, 4, 11)),
    ("Conv1d", (4, 6, 4), {"padding": "same", "padding_mode": "reflect"}, (2, 4, 9)),
    ("Conv1d", (3, 3, 3), {"padding": 2, "padding_mode": "circular"}, (3, 8)),
    ("Conv2d", (4, 6, 3), {"padding": 1, "padding_mode": "reflect"}, (2, 4, 6, 5)),
    ("Conv2d", (4, 6, (3, 2)), {"padding": (1, 2), "padding_mode": "replicate", "stride": (2, 1)}, (2, 4, 7, 6)),
    ("Conv2d", (4, 6, 3), {"padding": (2, 1), "padding_mode": "circular", "dilation": (1, 2)}, (2, 4, 6, 7)),
    ("Conv2d", (4, 6, (4, 3)), {"padding": "same", "dilation": (1, 2)}, (2, 4, 7, 8)),
    ("Conv2d", (4, 6, (4, 2)), {"padding": "same", "padding_mode": "circular"}, (2, 4, 7, 8)),
    ("Conv2d", (4, 6, 3), {"padding": "valid", "groups": 2, "bias": False}, (2, 4, 6, 6)),
    ("Conv2d", (4, 4, 3), {"groups": 4, "padding": 1, "stride": 2}, (2, 4, 7, 7)),
    ("Conv3d", (4, 6, 3), {"padding": 1}, (2, 4, 4, 5, 4)),
    ("Conv3d", (4, 6, (2, 3, 2)), {"stride": (1, 2, 2), "dilation": (2, 1, 1), "groups": 2, "bias": False},
     (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 4, 3), {"padding": 1, "padding_mode": "replicate"}, (2, 4, 4, 3)),
    ("Conv3d", (2, 4, 2), {"padding": "same", "padding_mode": "reflect"}, (1, 2, 4, 4, 3)),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (2, 4, 7)),
    ("ConvTranspose1d", (3, 2, 4), {"dilation": 2, "bias": False}, (3, 5)),
    ("ConvTranspose2d", (4, 6, 4), {"stride": 2, "padding": 1}, (2, 4, 5, 5)),
    ("ConvTranspose2d", (4, 6, (3, 2)), {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2),
                                          "dilation": (1, 2), "groups": 2}, (2, 4, 4, 5)),
    ("ConvTranspose2d", (100, 8, 4), {"bias": False}, (3, 100, 1, 1)),
    ("ConvTranspose3d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1}, (2, 4, 3, 3, 2)),
    ("ConvTranspose3d", (4, 2, (2, 3, 2)), {"groups": 2, "dilation": (1, 1, 2), "bias": False}, (4, 3, 2, 3)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", CONVS,
                         ids=[f"{n}-{i}" for i, (n, *_rest) in enumerate(CONVS)])
def test_layer_matches_torch(name, args, kwargs, shape):
    compare_layer(torch, lambda T: getattr(T.nn, name)(*args, **kwargs), RNG.standard_normal(shape))


@pytest.mark.parametrize("output_size", [[9, 10], [2, 4, 10, 9], [10, 9]])
def test_conv_transpose_output_size_picks_output_padding(output_size):
    compare_layer(torch, lambda T: T.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1), RNG.standard_normal((2, 6, 5, 5)),
                  call=lambda layer, x: layer(x, output_size=output_size))


def test_initialisation_matches_torch_statistics():
    layer = scriptc.nn.ConvTranspose2d(64, 32, 4)
    bound = 1 / np.sqrt(32 * 16)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (64, 32, 4, 4) and np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.std() > bound / 2


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 4, 5), T.ones(4, 3, 3)),
    lambda T: T.nn.functional.conv1d(T.ones(2, 5, 10), T.ones(4, 3, 3)),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 2), T.ones(4, 3, 3)),
    lambda T: T.nn.functional.conv3d(T.ones(2, 3, 2, 2, 2), T.ones(4, 3, 3, 3, 3)),
    lambda T: T.nn.functional.conv_transpose1d(T.ones(2, 5, 10), T.ones(3, 4, 3)),
    lambda T: T.nn.functional.conv_transpose2d(T.ones(2, 3, 10, 10), T.ones(3, 4, 3, 3), stride=2, output_padding=2),
    lambda T: T.nn.functional.conv_transpose1d(T.ones(2, 3, 10), T.ones(3, 4, 3), stride=2, output_padding=2),
    lambda T: T.nn.functional.conv_transpose3d(T.ones(2, 3, 4, 4, 4), T.ones(3, 4, 3, 3, 3), stride=2,
                                               output_padding=2),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), stride=2, padding="same"),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), padding="foo"),
    lambda T: T.nn.functional.conv1d(T.ones(2, 4, 10), T.ones(3, 2, 3), groups=2),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), stride=0),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), padding=-1),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), bias=T.ones(3)),
    lambda T: T.nn.functional.conv1d(T.ones(2, 3, 10), T.ones(4, 3, 3), padding=(1, 1)),
    lambda T: T.nn.functional.conv_transpose1d(T.ones(2, 3, 10), T.ones(3, 4, 3), bias=T.ones(3)),
    lambda T: T.nn.Conv1d(4, 3, 3, groups=2),
    lambda T: T.nn.Conv1d(3, 4, 3, groups=2),
    lambda T: T.nn.Conv2d(3, 4, 3, padding="same", stride=2),
    lambda T: T.nn.Conv3d(3, 4, 3, padding="bar"),
    lambda T: T.nn.ConvTranspose1d(3, 4, 3, padding_mode="reflect"),
    lambda T: T.nn.ConvTranspose2d(3, 4, 3, stride=2)(T.ones(1, 3, 4, 4), output_size=[20, 20]),
    lambda T: T.nn.ConvTranspose2d(3, 4, 3, stride=2)(T.ones(1, 3, 4, 4), output_size=[9]),
], ids=lambda fn: "")
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_conv_layers_trace_and_script_like_the_eager_model():
    """(ConvTranspose's forward, as torch writes it, needs list slicing from the script frontend, so the
    scripted model here has none; the traced one does.)"""
    class Net(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = scriptc.nn.Conv1d(3, 4, 3, padding=1, padding_mode="reflect")
            self.t1 = scriptc.nn.ConvTranspose1d(4, 2, 4, stride=2, padding=1)
            self.c3 = scriptc.nn.Conv3d(2, 2, 3, padding="same")

        def forward(self, x):
            y = self.t1(self.c1(x))
            return self.c3(y.reshape(1, 2, 2, 4, 4))

    net = Net()
    x = scriptc.randn(2, 3, 8)
    expected = net(x).detach().numpy()
    np.testing.assert_allclose(scriptc.jit.trace(net, (x,))(x).detach().numpy(), expected, rtol=1e-5, atol=1e-5)
    convs = scriptc.nn.Sequential(net.c1, scriptc.nn.ReLU(), scriptc.nn.Conv1d(4, 2, 2, padding_mode="circular",
                                                                              padding=1))
    np.testing.assert_allclose(scriptc.jit.script(convs)(x).detach().numpy(), convs(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch_and_scripts(pad):
    from .compare import compare_call

    args = [RNG.standard_normal(shape).astype(np.float32) for shape in ((6, 2, 3), (3, 3, 4), (4,))]
    compare_call(lambda T, x, w, b: T.conv_tbc(x, w, b, pad), args)
    x, w, b = (scriptc.tensor(a) for a in args)
    np.testing.assert_allclose(scriptc.jit.script(_tbc)(x, w, b, pad).numpy(),
                               scriptc.nn.functional.conv_tbc(x, w, b, pad).numpy(), rtol=1e-6)


def _tbc(x: scriptc.Tensor, w: scriptc.Tensor, b: scriptc.Tensor, pad: int) -> scriptc.Tensor:
    return scriptc.nn.functional.conv_tbc(x, w, b, pad)


@pytest.mark.parametrize("operands", [
    lambda T: (T.ones(2, 3), T.ones(3, 3, 4), T.ones(4)), lambda T: (T.ones(6, 2, 3), T.ones(3, 4), T.ones(4)),
    lambda T: (T.ones(6, 2, 3), T.ones(3, 3, 4), T.ones(1, 4)), lambda T: (T.ones(6, 2, 3), T.ones(3, 2, 4), T.ones(4)),
    lambda T: (T.ones(6, 2, 3), T.ones(3, 3, 4), T.ones(3)),
])
def test_conv_tbc_refuses_bad_shapes_as_torch(operands):
    same_error(torch, lambda T: T.conv_tbc(*operands(T)))
