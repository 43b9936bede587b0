"""FractionalMaxPool2d/3d and F.fractional_max_pool2d/3d against torch: with given _random_samples the
values, indices and gradients match exactly (output_size or output_ratio, batched or not); without, the
samples come from the default generator (reproducible under manual_seed); torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def _samples(batch, channels, dims):
    return RNG.uniform(0, 1, (batch, channels, dims))


LAYERS = [
    ("FractionalMaxPool2d", (3,), {"output_size": (8, 7)}, (2, 3, 10, 9)),
    ("FractionalMaxPool2d", ((2, 3),), {"output_ratio": 0.5, "return_indices": True}, (2, 3, 10, 9)),
    ("FractionalMaxPool2d", (2,), {"output_size": 5, "return_indices": True}, (3, 11, 12)),
    ("FractionalMaxPool3d", (2,), {"output_size": (4, 5, 6)}, (2, 3, 7, 8, 9)),
    ("FractionalMaxPool3d", ((2, 3, 2),), {"output_ratio": (0.5, 0.6, 0.7), "return_indices": True}, (3, 7, 8, 9)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS, ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_matches_torch_with_given_samples(name, args, kwargs, shape):
    dims = int(name[-2])
    batch = shape[0] if len(shape) == dims + 2 else 1
    samples = _samples(batch, shape[-dims - 1], dims)
    compare_layer(torch, lambda T: getattr(T.nn, name)(*args, **kwargs, _random_samples=T.tensor(samples)),
                  RNG.standard_normal(shape))


def test_functional_with_float32_samples_matches_torch():
    x, samples = RNG.standard_normal((2, 4, 13, 11)).astype(np.float32), _samples(2, 4, 2).astype(np.float32)
    ours = scriptc.nn.functional.fractional_max_pool2d(scriptc.tensor(x), 3, output_size=(9, 7), return_indices=True,
                                                       _random_samples=scriptc.tensor(samples))
    theirs = torch.nn.functional.fractional_max_pool2d(torch.tensor(x), 3, output_size=(9, 7), return_indices=True,
                                                       _random_samples=torch.tensor(samples))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_default_samples_come_from_the_generator():
    pool = scriptc.nn.FractionalMaxPool2d(2, output_ratio=0.4, return_indices=True)
    x = scriptc.randn(2, 3, 12, 12)
    scriptc.manual_seed(4)
    first = pool(x)
    scriptc.manual_seed(4)
    again = pool(x)
    assert first[0].shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(first[1].numpy(), again[1].numpy())
    # every output is the input element its index names
    np.testing.assert_array_equal(first[0].numpy(), np.take_along_axis(x.numpy().reshape(2, 3, -1),
                                                                       first[1].numpy().reshape(2, 3, -1),
                                                                       2).reshape(2, 3, 4, 4))
    draws = {tuple(pool(x)[1].numpy().reshape(-1)) for _ in range(4)}
    assert len(draws) > 1


def test_state_dict_holds_given_samples_only():
    assert "_random_samples" not in scriptc.nn.FractionalMaxPool2d(2, output_size=3).state_dict()
    given = scriptc.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=scriptc.rand(1, 2, 2))
    assert list(given.state_dict()) == list(torch.nn.FractionalMaxPool2d(2, output_size=3,
                                                                         _random_samples=torch.rand(1, 2, 2))
                                            .state_dict())


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=9),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=(8, 8)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=4,
                                                    _random_samples=T.rand(2, 3, 3)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=4,
                                                    _random_samples=T.rand(1, 3, 2)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=4,
                                                    _random_samples=T.rand(2, 2, 2)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=4,
                                                    _random_samples=T.rand(2, 3, 2, 1)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3, 10, 9), 3, output_size=4,
                                                    _random_samples=T.rand(2, 3, 2, dtype=T.float64)),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 0, 10, 9), 3, output_size=4),
    lambda T: T.nn.functional.fractional_max_pool3d(T.ones(2, 3, 6, 7, 8), 3, output_size=(4, 4, 4)),
    lambda T: T.nn.functional.fractional_max_pool3d(T.ones(2, 3, 8, 7, 8), 3, output_size=(4, 5, 4)),
    lambda T: T.nn.FractionalMaxPool2d(3),
    lambda T: T.nn.FractionalMaxPool2d(3, output_size=4, output_ratio=0.5),
    lambda T: T.nn.FractionalMaxPool3d(3, output_ratio=1.5),
])
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)
