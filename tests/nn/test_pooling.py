"""Pooling layers against torch: max (return_indices, ceil_mode, dilation, padding), average
(count_include_pad, divisor_override, ceil_mode), adaptive average and max, max_unpool, LPPool, in
1, 2 and 3 spatial dims, batched and not; repr and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)

LAYERS = [
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "dilation": 2}, (2, 3, 11)),
    ("MaxPool1d", (2,), {"ceil_mode": True, "return_indices": True}, (3, 7)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, (2, 3, 7, 8)),
    ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "dilation": (1, 2), "ceil_mode": True, "return_indices": True},
     (2, 3, 8, 7)),
    ("MaxPool3d", (2,), {"stride": (1, 2, 2), "padding": 1, "return_indices": True}, (2, 2, 4, 5, 4)),
    ("MaxPool3d", ((2, 3, 2),), {"ceil_mode": True}, (2, 5, 5, 5)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 10)),
    ("AvgPool1d", (3,), {"ceil_mode": True}, (3, 8)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 8, 7)),
    ("AvgPool2d", ((3, 2),), {"padding": (1, 1), "count_include_pad": False, "divisor_override": 5}, (2, 3, 7, 6)),
    ("AvgPool3d", (2,), {"stride": 1, "padding": 1, "count_include_pad": False}, (2, 2, 3, 4, 3)),
    ("AvgPool3d", ((3, 2, 2),), {"ceil_mode": True, "stride": 2}, (2, 5, 5, 6)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, None),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", (1,), {}, (3, 7, 5)),
    ("AdaptiveAvgPool3d", ((2, 3, 1),), {}, (2, 2, 5, 7, 3)),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}, (2, 3, 9)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", (4,), {"return_indices": True}, (3, 9, 6)),
    ("AdaptiveMaxPool3d", ((2, 3, 2),), {"return_indices": True}, (2, 2, 5, 7, 3)),
    ("LPPool1d", (2, 3), {"stride": 2}, (2, 3, 9)),
    ("LPPool2d", (3, 2), {}, (2, 3, 6, 6)),
    ("LPPool2d", (float("inf"), (2, 3)), {"stride": 1, "ceil_mode": True}, (2, 3, 6, 7)),
    ("LPPool3d", (1.5, 2), {}, (2, 2, 4, 4, 4)),
]


def _positive_if_lp(name, x):
    """LPPool takes powers (1.5, 3) of its input: torch and scriptc agree there only for x >= 0."""
    return np.abs(x) + 0.1 if name.startswith("LP") else x


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS, ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, shape):
    compare_layer(torch, lambda T: getattr(T.nn, name)(*args, **kwargs),
                  _positive_if_lp(name, RNG.standard_normal(shape)))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_inverts_max_pool(dims):
    def build(T):
        class Roundtrip(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = getattr(T.nn, f"MaxPool{dims}d")(2, stride=2, return_indices=True)
                self.unpool = getattr(T.nn, f"MaxUnpool{dims}d")(2, stride=2)

            def forward(self, x):
                values, indices = self.pool(x)
                return self.unpool(values * 2, indices, output_size=x.shape), indices
        return Roundtrip()
    compare_layer(torch, build, RNG.standard_normal((2, 3) + (5,) * dims))


def _unpool_2d(values: scriptc.Tensor, indices: scriptc.Tensor) -> scriptc.Tensor:
    return scriptc.nn.functional.max_unpool2d(values, indices, 3, stride=2, padding=1, output_size=[1, 3, 7, 8])


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_layers_script(dims):
    # (real torch.jit.script refuses nn.MaxUnpoolNd with an internal assert; F.max_unpoolNd scripts there)
    x = scriptc.tensor(RNG.standard_normal((2, 3) + (6,) * dims).astype(np.float32))
    values, indices = getattr(scriptc.nn.functional, f"max_pool{dims}d")(x, 2, return_indices=True)
    layer = getattr(scriptc.nn, f"MaxUnpool{dims}d")(2)
    scripted = scriptc.jit.script(layer)
    for size in (None, [7] * dims):
        np.testing.assert_array_equal(scripted(values, indices, size).numpy(), layer(values, indices, size).numpy())


def test_max_unpool_function_scripts_with_its_window_arguments():
    x = scriptc.tensor(RNG.standard_normal((1, 3, 7, 8)).astype(np.float32))
    values, indices = scriptc.nn.functional.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    got = scriptc.jit.script(_unpool_2d)(values, indices)
    expected = torch.nn.functional.max_unpool2d(torch.tensor(values.numpy()), torch.tensor(indices.numpy()), 3,
                                                stride=2, padding=1, output_size=[1, 3, 7, 8])
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.max_pool2d(T.ones(2, 3), 2),
    lambda T: T.nn.functional.max_pool1d(T.ones(3), 2),
    lambda T: T.nn.functional.max_pool3d(T.ones(2, 2, 2), 2),
    lambda T: T.nn.functional.max_pool2d(T.ones(1, 3, 4, 4), 2, padding=2),
    lambda T: T.nn.functional.max_pool1d(T.ones(1, 3, 4), 2, padding=2),
    lambda T: T.nn.functional.max_pool2d(T.ones(1, 3, 2, 2), 3),
    lambda T: T.nn.functional.max_pool1d(T.ones(1, 3, 2), 3),
    lambda T: T.nn.functional.max_pool3d(T.ones(1, 3, 2, 2, 2), 3),
    lambda T: T.nn.functional.avg_pool2d(T.ones(1, 3, 2, 2), 3),
    lambda T: T.nn.functional.avg_pool3d(T.ones(1, 3, 4, 4, 4), 2, padding=2),
    lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(4), 2),
    lambda T: T.nn.functional.adaptive_avg_pool1d(T.ones(1, 4, 4, 4), 2),
    lambda T: T.nn.functional.adaptive_max_pool3d(T.ones(4, 4), 2),
    lambda T: T.nn.functional.max_pool2d(T.ones(1, 3, 4, 4), 2, stride=0),
    lambda T: T.nn.functional.avg_pool2d(T.ones(1, 3, 4, 4), 2, divisor_override=0),
    lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 3, 4, 4), (2, -1)),
    lambda T: T.nn.functional.max_unpool2d(T.ones(1, 1, 2, 2), T.zeros(1, 1, 2, 2, dtype=T.long), 2,
                                           output_size=(9, 9)),
    lambda T: T.nn.functional.max_unpool2d(T.ones(1, 1, 2, 2), T.full((1, 1, 2, 2), 20, dtype=T.long), 2),
    lambda T: T.nn.functional.max_unpool2d(T.ones(1, 1, 2, 2), T.ones(1, 1, 2, 2), 2),
], ids=lambda fn: "")
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_pools_trace_and_script_like_the_eager_model():
    model = scriptc.nn.Sequential(scriptc.nn.MaxPool2d(3, 2, 1, ceil_mode=True), scriptc.nn.AvgPool2d(2, 1, 1),
                                  scriptc.nn.AdaptiveMaxPool2d((2, 3)), scriptc.nn.AdaptiveAvgPool2d(1))
    x = scriptc.randn(2, 3, 9, 8)
    expected = model(x).numpy()
    for compiled in (scriptc.jit.trace(model, (x,)), scriptc.jit.script(model)):
        np.testing.assert_allclose(compiled(x).numpy(), expected, rtol=1e-6)
