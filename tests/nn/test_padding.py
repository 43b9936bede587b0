"""Padding layers and F.pad against torch: every mode, negative pads, repr, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(9)

LAYERS = []
for _kind, _extra in (("Reflection", ()), ("Replication", ()), ("Zero", ()), ("Constant", (2.5,)), ("Circular", ())):
    for _dims in (1, 2, 3):
        _padding = (1, 2, 0, 1, 2, 1)[:2 * _dims]
        _shape = (2, 3) + (4,) * _dims
        LAYERS.append((f"{_kind}Pad{_dims}d", (_padding,) + _extra, _shape))
        LAYERS.append((f"{_kind}Pad{_dims}d", (1,) + _extra, _shape[1:]))


@pytest.mark.parametrize("name, args, shape", LAYERS, ids=[f"{n}-{len(s)}d" for n, _, s in LAYERS])
def test_layer_matches_torch(name, args, shape):
    compare_layer(torch, lambda T: getattr(T.nn, name)(*args), RNG.standard_normal(shape))


def _pad_layer(T, pad, mode):
    class PadLayer(T.nn.Module):
        def forward(self, x):
            return T.nn.functional.pad(x, pad, mode)
    return PadLayer()


@pytest.mark.parametrize("pad, mode", [([-1, 2, 1, -2], "constant"), ([2, -1, -1, 1], "reflect"),
                                       ([-2, 3, 0, 2], "replicate"), ([1, -2, 2, -1], "circular")])
def test_negative_pads_crop(pad, mode):
    compare_layer(torch, lambda T: _pad_layer(T, pad, mode), RNG.standard_normal((2, 3, 5, 6)))


@pytest.mark.parametrize("pad", [[3, 3, 0, 0], [-1, 2, 1, 1], [-3, 0, 0, 0], [2, 3, -1, 2]])
def test_circular_pads_up_to_one_full_wrap(pad):
    """torch wraps each side at most once around the (cropped) input: a pad of the full size is allowed."""
    compare_layer(torch, lambda T: _pad_layer(T, pad, "circular"), RNG.standard_normal((2, 2, 3, 3)))


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1, 2, 3]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1] * 8),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [-2, -2]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1, 1], mode="reflect", value=1.0),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [3, 3], mode="reflect"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3, 3), [1, 1, 3, 3], mode="reflect"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [4, 0], mode="circular"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [-1, 5], mode="circular"),
    lambda T: T.nn.functional.pad(T.ones(1, 1, 3, 4), [5, 1, 4, 2], mode="circular"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [-2, -2], mode="circular"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1, 1, 1, 1, 1, 1], mode="reflect"),
    lambda T: T.nn.functional.pad(T.ones(3), [1, 1], mode="replicate"),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1, 1], mode="foo"),
    lambda T: T.nn.CircularPad2d(1)(T.ones(2, 3)),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [T.tensor([1.0]), 0]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [T.tensor([1, 2]), 0]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [1.5, 0]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [True, 0]),
    lambda T: T.nn.functional.pad(T.ones(1, 2, 3), [T.tensor([True]), 0]),
], ids=lambda fn: "")
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_one_element_integer_tensors_pad_as_ints():
    """Pytorch-UNet's Up block: pads computed as torch.tensor([x2.size(2) - x1.size(2)]) and halved."""
    def up_pad(T):
        class UpPad(T.nn.Module):
            def forward(self, x1, x2):
                diff_y = T.tensor([x2.size()[2] - x1.size()[2]])
                diff_x = T.tensor([x2.size()[3] - x1.size()[3]])
                return T.nn.functional.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        return UpPad()
    x1, x2 = RNG.standard_normal((1, 2, 3, 3)), RNG.standard_normal((1, 2, 6, 5))
    compare_layer(torch, up_pad, x1, x2)
    ours = up_pad(scriptc)
    inputs = (scriptc.tensor(x1), scriptc.tensor(x2))
    with pytest.warns(scriptc.jit.TracerWarning):  # the pads are baked in, as torch warns too
        traced = scriptc.jit.trace(ours, inputs)
    np.testing.assert_array_equal(traced(*inputs).numpy(), ours(*inputs).numpy())
