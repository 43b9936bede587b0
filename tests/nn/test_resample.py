"""Resampling and rearranging layers against torch: Upsample (every mode, size or scale_factor,
align_corners, recompute_scale_factor), UpsamplingNearest2d/Bilinear2d, F.grid_sample and
F.affine_grid, PixelShuffle/Unshuffle, ChannelShuffle, Fold/Unfold; repr, torch's errors and warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(17)

LAYERS = [
    ("Upsample", (), {"scale_factor": 2}, (2, 3, 4, 5)),
    ("Upsample", (), {"size": (7, 3), "mode": "nearest-exact"}, (2, 3, 4, 5)),
    ("Upsample", (), {"scale_factor": 1.7, "mode": "bilinear"}, (2, 3, 4, 5)),
    ("Upsample", (), {"size": 9, "mode": "bilinear", "align_corners": True}, (2, 3, 4, 5)),
    ("Upsample", (), {"scale_factor": (0.6, 2.5), "mode": "bicubic", "recompute_scale_factor": True}, (2, 3, 6, 5)),
    ("Upsample", (), {"scale_factor": 2.5, "mode": "bicubic", "align_corners": True}, (1, 2, 4, 3)),
    ("Upsample", (), {"size": 11, "mode": "linear"}, (2, 3, 6)),
    ("Upsample", (), {"scale_factor": 0.5, "mode": "area"}, (2, 3, 8, 6)),
    ("Upsample", (), {"size": (3, 5, 2), "mode": "area"}, (1, 2, 5, 4, 6)),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "trilinear"}, (1, 2, 3, 4, 2)),
    ("Upsample", (), {"scale_factor": 3}, (2, 3, 4)),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, (2, 3, 4, 5)),
    ("UpsamplingBilinear2d", (), {"size": (6, 9)}, (2, 3, 4, 5)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 4)),
    ("PixelShuffle", (3,), {}, (2, 1, 9, 2, 2)),
    ("PixelUnshuffle", (2,), {}, (2, 3, 4, 6)),
    ("ChannelShuffle", (3,), {}, (2, 6, 3, 4)),
    ("Unfold", ((2, 3),), {"dilation": (1, 2), "padding": 1, "stride": (2, 1)}, (2, 3, 6, 7)),
    ("Unfold", (2,), {}, (3, 4, 5)),
    ("Fold", ((4, 5), 2), {}, (2, 12, 12)),
    ("Fold", ((5, 6), (2, 3)), {"dilation": 1, "padding": (1, 0), "stride": 2}, (2, 18, 6)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS, ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, shape):
    compare_layer(torch, lambda T: getattr(T.nn, name)(*args, **kwargs), RNG.standard_normal(shape))


def _sampler(T, mode, padding_mode, align_corners):
    class Sampler(T.nn.Module):
        def forward(self, x, theta):
            grid = T.nn.functional.affine_grid(theta, [x.shape[0], x.shape[1], 5, 4], align_corners=align_corners)
            return T.nn.functional.grid_sample(x, grid * 1.3, mode, padding_mode, align_corners)
    return Sampler()


class _Interpolate:
    """F.interpolate with fixed arguments, as a module for compare_layer."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __call__(self, T):
        kwargs = self.kwargs

        class Interpolate(T.nn.Module):
            def forward(self, x):
                return T.nn.functional.interpolate(x, **kwargs)
        return Interpolate()


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kwargs, shape", [({"size": (5, 4)}, (2, 3, 17, 13)), ({"scale_factor": (0.5, 1.7)}, (1, 2, 20, 21)),
                                           ({"size": (4, 3), "align_corners": True}, (1, 1, 9, 7)),
                                           ({"scale_factor": 0.37, "recompute_scale_factor": True}, (1, 2, 30, 30)),
                                           ({"size": (16, 20)}, (1, 2, 8, 9))])
def test_antialias_matches_torch(mode, kwargs, shape):
    compare_layer(torch, _Interpolate(mode=mode, antialias=True, **kwargs), RNG.standard_normal(shape))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_spatial_transformer_matches_torch(mode, padding_mode, align_corners):
    theta = np.array([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.05]], [[1.2, 0.1, 0.0], [-0.4, 0.8, 0.2]]])
    compare_layer(torch, lambda T: _sampler(T, mode, padding_mode, align_corners), RNG.standard_normal((2, 3, 6, 7)),
                  theta)


def test_grid_sample_in_3d():
    compare_layer(torch, lambda T: _Sample3d(T), RNG.standard_normal((2, 2, 3, 4, 5)),
                  RNG.uniform(-1.2, 1.2, (2, 3, 2, 4, 3)))


def _Sample3d(T):
    class Sample3d(T.nn.Module):
        def forward(self, x, grid):
            return T.nn.functional.grid_sample(x, grid, "bilinear", "reflection", align_corners=False)
    return Sample3d()


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4)),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=2, scale_factor=2),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=[2]),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), scale_factor=2, align_corners=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), scale_factor=2, mode="linear"),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), scale_factor=2, mode="trilinear"),
    lambda T: T.nn.functional.interpolate(T.ones(2, 3), scale_factor=2),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), scale_factor=2, mode="foo"),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=3, recompute_scale_factor=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), scale_factor=2, antialias=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4), scale_factor=0.5, mode="linear", antialias=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 2, 4, 4), size=(0, 3)),
    lambda T: T.nn.functional.grid_sample(T.ones(1, 2, 4, 4), T.zeros(1, 3, 3, 3), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.ones(1, 2, 4, 4), T.zeros(1, 3, 3, 2), mode="foo"),
    lambda T: T.nn.functional.grid_sample(T.ones(1, 2, 4, 4), T.zeros(1, 3, 3, 2), padding_mode="foo"),
    lambda T: T.nn.functional.grid_sample(T.ones(1, 2, 3, 3, 3), T.zeros(1, 2, 2, 2, 3), mode="bicubic",
                                          align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.ones(1, 2, 4, 4), T.zeros(2, 3, 3, 2), align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), [1, 1, 3, 3, 3], align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), [1, 1, 3, 3], align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), [1, 1, 3], align_corners=False),
    lambda T: T.nn.functional.pixel_shuffle(T.ones(2, 3, 4, 4), 2),
    lambda T: T.nn.functional.pixel_shuffle(T.ones(4, 4), 2),
    lambda T: T.nn.functional.pixel_unshuffle(T.ones(1, 4, 3, 4), 2),
    lambda T: T.nn.functional.channel_shuffle(T.ones(2, 6, 4, 4), 4),
    lambda T: T.nn.functional.channel_shuffle(T.ones(6), 2),
    lambda T: T.nn.functional.fold(T.ones(2, 12, 10), (4, 5), 2),
    lambda T: T.nn.functional.fold(T.ones(2, 10, 12), (4, 5), 2),
    lambda T: T.nn.functional.unfold(T.ones(1, 2, 3, 3), 4),
], ids=lambda fn: "")
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2)),
    lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), [1, 1, 2, 2]),
], ids=["grid_sample", "affine_grid"])
def test_default_align_corners_warns_as_torch(call):
    messages = []
    for T in (scriptc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(T)
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and messages[0]


def test_resampling_traces_and_scripts_like_the_eager_model():
    model = scriptc.nn.Sequential(scriptc.nn.Upsample(scale_factor=2, mode="bilinear"), scriptc.nn.PixelUnshuffle(2),
                                  scriptc.nn.ChannelShuffle(2), scriptc.nn.UpsamplingNearest2d(size=(5, 7)))
    x = scriptc.randn(2, 2, 4, 6)
    expected = model(x).numpy()
    for compiled in (scriptc.jit.trace(model, (x,)), scriptc.jit.script(model)):
        np.testing.assert_allclose(compiled(x).numpy(), expected, rtol=1e-6)
