"""Normalization layers against torch: BatchNorm1d/2d/3d (momentum=None, track_running_stats=False,
affine=False, bias=False), InstanceNorm1d/2d/3d (affine, track_running_stats, unbatched), GroupNorm,
LayerNorm, RMSNorm, LocalResponseNorm: repr, state_dict keys, forward and backward in train and eval
mode, running statistics, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(13)

LAYERS = [
    ("BatchNorm1d", (3,), {}, (4, 3)),
    ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 5)),
    ("BatchNorm1d", (3,), {"affine": False, "track_running_stats": False}, (4, 3, 5)),
    ("BatchNorm2d", (3,), {"eps": 1e-3, "momentum": 0.3, "bias": False}, (2, 3, 4, 3)),
    ("BatchNorm3d", (3,), {}, (2, 3, 2, 3, 2)),
    ("BatchNorm3d", (3,), {"momentum": None, "affine": False}, (2, 3, 2, 3, 2)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5)),
    ("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True}, (3, 5)),
    ("InstanceNorm2d", (3,), {"affine": True}, (2, 3, 4, 3)),
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": 0.5}, (2, 3, 4, 3)),
    ("InstanceNorm3d", (2,), {"affine": True, "track_running_stats": True}, (2, 2, 2, 3, 2)),
    ("InstanceNorm3d", (2,), {}, (2, 3, 3, 2)),
    ("GroupNorm", (2, 6), {}, (2, 6, 3, 2)),
    ("GroupNorm", (3, 6), {"affine": False, "eps": 1e-3}, (2, 6, 5)),
    ("GroupNorm", (1, 4), {"bias": False}, (3, 4)),
    ("LayerNorm", ((3, 4),), {}, (2, 3, 4)),
    ("LayerNorm", (4,), {"bias": False}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 3, 4)),
    ("RMSNorm", (4,), {}, (2, 3, 4)),
    ("RMSNorm", ((3, 4),), {"eps": 1e-3}, (2, 3, 4)),
    ("RMSNorm", (4,), {"elementwise_affine": False}, (5, 4)),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4)),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, (2, 5, 3, 4)),
    ("LocalResponseNorm", (4,), {}, (2, 6, 2, 3, 2)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS, ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, shape):
    def randomize_affine(T):
        layer = getattr(T.nn, name)(*args, **kwargs)
        with T.no_grad():
            for p in layer.parameters():
                p.copy_(T.tensor(RNG.standard_normal(tuple(p.shape)), dtype=p.dtype))
        return layer
    ours, _ = compare_layer(torch, randomize_affine, RNG.standard_normal(shape) * 2 + 1, rtol=1e-6, atol=1e-8)
    assert list(ours.state_dict()) == list(getattr(torch.nn, name)(*args, **kwargs).state_dict())


def test_batchnorm_cumulative_average_over_several_batches():
    def build(T):
        return T.nn.BatchNorm1d(3, momentum=None)
    ours, theirs = build(scriptc).double(), build(torch).double()
    for _ in range(3):
        x = RNG.standard_normal((5, 3))
        ours(scriptc.tensor(x))
        theirs(torch.tensor(x))
    for (name, mine), (_, expected) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(mine.numpy(), expected.numpy(), rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.GroupNorm(3, 4),
    lambda T: T.nn.GroupNorm(2, 4)(T.ones(2, 6, 3)),
    lambda T: T.nn.functional.group_norm(T.ones(2, 6, 3), 4),
    lambda T: T.nn.functional.group_norm(T.ones(1, 2), 2),
    lambda T: T.nn.GroupNorm(2, 4)(T.ones(4)),
    lambda T: T.nn.InstanceNorm1d(3, affine=True)(T.ones(2, 4, 5)),
    lambda T: T.nn.InstanceNorm1d(3)(T.ones(2, 3, 1)),
    lambda T: T.nn.InstanceNorm2d(3)(T.ones(2, 3)),
    lambda T: T.nn.BatchNorm1d(3)(T.ones(2, 3, 4, 5)),
    lambda T: T.nn.BatchNorm3d(3)(T.ones(2, 3, 4, 5)),
    lambda T: T.nn.BatchNorm2d(3)(T.ones(2, 4, 3, 3)),
    lambda T: T.nn.LocalResponseNorm(2)(T.ones(2, 3)),
    lambda T: T.nn.RMSNorm(4)(T.ones(2, 3)),
    lambda T: T.nn.LayerNorm(4)(T.ones(2, 3)),
], ids=lambda fn: "")
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_norm_layers_trace_and_script_like_the_eager_model():
    model = scriptc.nn.Sequential(scriptc.nn.GroupNorm(2, 4), scriptc.nn.InstanceNorm2d(4, affine=True),
                                  scriptc.nn.BatchNorm2d(4), scriptc.nn.RMSNorm(5))
    model.eval()
    x = scriptc.randn(2, 4, 3, 5)
    expected = model(x).detach().numpy()
    for compiled in (scriptc.jit.trace(model, (x,)), scriptc.jit.script(model)):
        np.testing.assert_allclose(compiled(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
