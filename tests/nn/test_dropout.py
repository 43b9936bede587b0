"""Dropout layers: identity in eval, torch's statistics in training (which elements or channels are
dropped, how the rest are scaled, alpha dropout's preserved moments), gradients through the mask,
repr and torch's errors and warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

LAYERS = [("Dropout", (2, 3, 4)), ("Dropout1d", (2, 3, 4)), ("Dropout1d", (3, 4)), ("Dropout2d", (2, 3, 4, 4)),
          ("Dropout3d", (2, 3, 2, 2, 2)), ("Dropout3d", (3, 2, 2, 2)), ("AlphaDropout", (3, 4)),
          ("FeatureAlphaDropout", (2, 3, 4, 4))]


@pytest.mark.parametrize("name, shape", LAYERS, ids=[f"{n}{len(s)}d" for n, s in LAYERS])
def test_eval_is_the_identity_and_repr_matches(name, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    compare_layer(torch, lambda T: getattr(T.nn, name)(0.3), x, modes=("eval",))
    assert repr(getattr(scriptc.nn, name)(0.2, inplace=True)) == repr(getattr(torch.nn, name)(0.2, inplace=True))


@pytest.mark.parametrize("name, shape", LAYERS, ids=[f"{n}{len(s)}d" for n, s in LAYERS])
def test_training_drops_what_torch_drops_and_gradient_follows_the_mask(name, shape):
    scriptc.manual_seed(0)
    p = 0.4
    big = (64,) + shape[1:] if len(shape) > 2 else (400, 50)
    x = scriptc.tensor(np.random.default_rng(1).standard_normal(big) + 5.0, requires_grad=True)
    layer = getattr(scriptc.nn, name)(p)
    y = layer(x)
    y.sum().backward()
    ratio = (y / x).detach().numpy()
    if name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d"):
        dropped = ratio == 0
        np.testing.assert_allclose(ratio[~dropped], 1 / (1 - p))
        np.testing.assert_allclose(x.grad.numpy(), ratio)
    else:
        a = 1 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
        dropped = np.isclose(y.detach().numpy(), -1.7580993408473766 * a * (1 - p))
        np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0, a))
    assert abs(dropped.mean() - p) < 0.08
    if name not in ("Dropout", "AlphaDropout"):
        unbatched = (name, dropped.ndim) in (("Dropout1d", 2), ("Dropout3d", 4))
        per_channel = dropped.reshape(dropped.shape[:1 if unbatched else 2] + (-1,))
        assert (per_channel.all(axis=-1) | ~per_channel.any(axis=-1)).all()


def test_alpha_dropout_keeps_zero_mean_and_unit_variance():
    scriptc.manual_seed(0)
    x = scriptc.randn(200000)
    y = scriptc.nn.functional.alpha_dropout(x, 0.3, training=True)
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1) < 0.02


def test_p_one_zeroes_everything():
    x = scriptc.ones(3, 4, 2)
    for fn in ("dropout", "dropout1d", "alpha_dropout"):
        assert not getattr(scriptc.nn.functional, fn)(x, 1.0, True).numpy().any()


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.Dropout2d(1.5),
    lambda T: T.nn.functional.dropout1d(T.ones(2, 3, 4, 5), 0.5),
    lambda T: T.nn.functional.alpha_dropout(T.ones(2), -0.1),
], ids=["p range", "dropout1d rank", "functional p"])
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_dropout2d_on_3d_input_warns_as_torch_does():
    messages = []
    for T in (scriptc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.nn.functional.dropout2d(T.ones(2, 3, 4), 0.5, True)
        messages.append(sorted(str(w.message) for w in caught))
    assert messages[0] == messages[1] and messages[0]


def test_inplace_dropout_in_eval_leaves_its_input_alone_and_traces():
    """EfficientNet's classifier: an in-place Dropout on a view (Flatten's) of a traced tensor."""
    nn = scriptc.nn
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Dropout(0.3, inplace=True),
                          nn.Linear(4, 2)).eval()
    x = scriptc.randn(3, 3, 5, 5)
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(scriptc.jit.trace(model, (x,))(x).detach().numpy(), expected, rtol=1e-6)
    y = scriptc.randn(5)
    assert scriptc.nn.functional.dropout(y, 0.5, training=False, inplace=True) is y and y._version == 0
