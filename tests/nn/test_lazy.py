"""Lazy modules and nn.Buffer against torch 2.13: shapes inferred from the first input, the class they
become, checkpoints that give the shapes, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
import scriptc.nn as nn

from .compare import copy_weights

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)

CASES = [
    ("LazyLinear", (5,), {}, (3, 7), "Linear"),
    ("LazyLinear", (4,), {"bias": False}, (2, 3, 6), "Linear"),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 9), "Conv1d"),
    ("LazyConv2d", (6, 3), {"stride": 2, "groups": 2}, (2, 4, 9, 9), "Conv2d"),
    ("LazyConv2d", (6, 3), {}, (4, 7, 7), "Conv2d"),
    ("LazyConv3d", (2, 2), {}, (1, 3, 4, 4, 4), "Conv3d"),
    ("LazyConvTranspose1d", (3, 2), {"stride": 2}, (2, 4, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (3, 3), {"stride": 2, "output_padding": 1}, (2, 4, 5, 5), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), {}, (4, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), {"momentum": 0.3}, (4, 3, 5, 5), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), {"affine": False}, (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), {"affine": True}, (2, 5, 7), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), {"track_running_stats": True}, (2, 3, 6, 6), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), {}, (2, 3, 3, 3, 3), "InstanceNorm3d"),
]


@pytest.mark.parametrize("name, args, kwargs, shape, becomes", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_lazy_module_matches_torch(name, args, kwargs, shape, becomes):
    x = rng.standard_normal(shape).astype(np.float32)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    assert ours.has_uninitialized_params()
    theirs(torch.tensor(x))
    ours(scriptc.tensor(x))
    assert type(ours).__name__ == becomes == type(theirs).__name__
    assert not hasattr(ours, "has_uninitialized_params")
    theirs_state = theirs.state_dict()
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {k: tuple(v.shape)
                                                                      for k, v in theirs_state.items()}
    copy_weights(theirs, ours)
    for module in (theirs, ours):
        module.train(False)
    expected = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(scriptc.tensor(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_lazy_parameters_are_trainable_after_the_first_call():
    model = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    model(scriptc.randn(1, 3, 6, 6))
    optimizer = scriptc.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    model(scriptc.randn(2, 3, 6, 6)).sum().backward()
    optimizer.step()
    assert [tuple(p.shape) for p in model.parameters()] == [(4, 3, 3, 3), (4,), (2, 64), (2,)]
    assert all(not np.array_equal(a.numpy(), b.detach().numpy()) for a, b in zip(before, model.parameters()))


def test_checkpoint_gives_lazy_parameters_their_shapes():
    source = nn.Linear(6, 3)
    lazy = nn.LazyLinear(3)
    lazy.load_state_dict(source.state_dict())
    assert tuple(lazy.weight.shape) == (3, 6)
    x = scriptc.randn(2, 6)
    np.testing.assert_allclose(lazy(x).detach().numpy(), source(x).detach().numpy())
    assert type(lazy) is nn.Linear


def test_uninitialized_parameter_refuses_shape_questions():
    weight = nn.LazyLinear(3).weight
    assert isinstance(weight, nn.UninitializedParameter) and isinstance(weight, nn.Parameter)
    assert repr(weight) == "<UninitializedParameter>"
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
            _ = T.nn.LazyLinear(3).weight.shape
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to LazyConv2d"):
        nn.LazyConv2d(2, 3)(scriptc.randn(3, 3))


def test_buffer_assignment_registers_a_buffer():
    class WithBuffers(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = nn.Buffer(scriptc.ones(3))
            self.scratch = nn.Buffer(scriptc.zeros(2), persistent=False)

        def forward(self, x):
            return x * self.mask

    module = WithBuffers()
    assert list(module.state_dict()) == ["mask"]
    assert [name for name, _ in module.named_buffers()] == ["mask", "scratch"]
    assert type(module.mask) is scriptc.Tensor
    module.mask = nn.Buffer(scriptc.full((3,), 2.0))
    np.testing.assert_array_equal(module(scriptc.ones(3)).numpy(), [2.0, 2.0, 2.0])
    traced = scriptc.jit.trace(module, (scriptc.ones(3),))
    np.testing.assert_array_equal(traced(scriptc.ones(3)).numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("build", [lambda T: T.nn.LazyLinear(4, dtype=T.float64), lambda T: T.nn.LazyLinear(4).double(),
                                   lambda T: T.nn.LazyBatchNorm1d().to(T.float64),
                                   lambda T: T.nn.LazyBatchNorm1d(dtype=T.float64)],
                         ids=["linear-dtype", "linear-double", "batchnorm-to", "batchnorm-dtype"])
def test_placeholders_keep_the_dtype_they_are_given_or_converted_to(build):
    seen = []
    for T in (scriptc, torch):
        module = build(T)
        before = (type(module.weight).__name__, str(module.weight.dtype).split(".")[-1])
        module(T.ones(2, 3, dtype=T.float64))
        seen.append((before, {name: str(t.dtype).split(".")[-1] for name, t in module.state_dict().items()}))
    assert seen[0] == seen[1]
