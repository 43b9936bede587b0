"""Every activation layer and its functional form against torch: repr, forward and backward in train and
eval mode with torch's weights, in-place variants, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import compare_layer, same_error

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)


def _input(*shape):
    """Values away from the kinks of the piecewise activations (0, +-0.5, +-1, +-3, 6), where finite
    differences and the two libraries' choice of one-sided derivative could differ."""
    x = RNG.uniform(-7, 7, shape)
    for kink in (0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, 0.1):
        x = np.where(np.abs(x - kink) < 0.02, kink + 0.05, x)
    return x


DETERMINISTIC = [
    ("ReLU", ()), ("ReLU", (True,)), ("ReLU6", ()), ("ReLU6", (True,)), ("LeakyReLU", (0.2,)),
    ("LeakyReLU", (0.1, True)), ("ELU", ()), ("ELU", (0.7, True)), ("SELU", ()), ("SELU", (True,)),
    ("CELU", (1.5,)), ("CELU", (0.5, True)), ("GELU", ()), ("GELU", ("tanh",)), ("Mish", ()), ("Mish", (True,)),
    ("Hardswish", ()), ("Hardswish", (True,)), ("Hardsigmoid", ()), ("Hardsigmoid", (True,)),
    ("Hardtanh", ()), ("Hardtanh", (-2.0, 2.5, True)), ("Softplus", ()), ("Softplus", (2.0, 5.0)),
    ("Softsign", ()), ("Softshrink", ()), ("Softshrink", (1.0,)), ("Hardshrink", ()), ("Hardshrink", (1.0,)),
    ("Tanhshrink", ()), ("LogSigmoid", ()), ("Softmin", (1,)), ("Softmax", (1,)), ("LogSoftmax", (-1,)),
    ("Softmax2d", ()), ("GLU", ()), ("GLU", (1,)), ("Threshold", (0.1, 20.0)), ("Threshold", (0.1, -1.0, True)),
    ("SiLU", ()), ("SiLU", (True,)), ("Sigmoid", ()), ("Tanh", ()), ("PReLU", ()), ("PReLU", (4, 0.1)),
]


@pytest.mark.parametrize("name, args", DETERMINISTIC, ids=[f"{n}{a}" for n, a in DETERMINISTIC])
def test_layer_matches_torch(name, args):
    inplace = True in args

    def run(layer, x):
        # an in-place layer writes into its input: give it a computed tensor, as a model does
        return layer(x * 1) if inplace else layer(x)

    compare_layer(torch, lambda T: getattr(T.nn, name)(*args), _input(2, 4, 3, 2), call=run)


def test_rrelu_in_eval_is_leaky_relu_with_the_mean_slope():
    compare_layer(torch, lambda T: T.nn.RReLU(0.1, 0.3), _input(3, 4), modes=("eval",))


def test_rrelu_in_training_draws_slopes_within_bounds_and_backpropagates_them():
    layer = scriptc.nn.RReLU(0.1, 0.3)
    x = scriptc.tensor(-np.abs(_input(2000)) - 0.1, requires_grad=True)
    y = layer(x)
    slopes = (y / x).detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)
    assert repr(layer) == repr(torch.nn.RReLU(0.1, 0.3))


FUNCTIONS = [("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 2.0}), ("hardtanh", {"min_val": -2.0}),
             ("relu6", {}), ("hardsigmoid", {}), ("hardswish", {}), ("mish", {}), ("leaky_relu", {}),
             ("threshold", {"threshold": 0.5, "value": -3.0}), ("rrelu", {"training": False})]


@pytest.mark.parametrize("name, kwargs", FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_inplace_functional_forms_write_into_their_input(name, kwargs):
    x = _input(3, 5)
    expected = getattr(torch.nn.functional, name)(torch.tensor(x), **kwargs).numpy()
    for spelled in ("inplace", "underscore"):
        if spelled == "underscore" and not hasattr(torch.nn.functional, name + "_"):
            continue
        ours = scriptc.tensor(x)
        if spelled == "inplace":
            out = getattr(scriptc.nn.functional, name)(ours, inplace=True, **kwargs)
        else:
            out = getattr(scriptc.nn.functional, name + "_")(ours, **kwargs)
        assert out is ours and ours._version == 1
        np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.glu(T.ones(2, 3)),
    lambda T: T.nn.functional.glu(T.tensor(1.0)),
    lambda T: T.nn.functional.prelu(T.ones(2, 3), T.ones(2)),
    lambda T: T.nn.functional.celu(T.ones(2), 0.0),
    lambda T: T.nn.functional.softshrink(T.ones(2), -1.0),
    lambda T: T.nn.Hardtanh(1.0, 0.5),
    lambda T: T.nn.Softmax2d()(T.ones(2, 3)),
    lambda T: T.nn.functional.softmin(T.ones(2, 3), 2),
], ids=["glu odd", "glu scalar", "prelu channels", "celu alpha 0", "softshrink lambd", "hardtanh bounds",
        "softmax2d rank", "softmin dim"])
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


def test_activations_trace_and_script_like_the_eager_model():
    class Net(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.prelu = scriptc.nn.PReLU(3)
            self.acts = scriptc.nn.Sequential(scriptc.nn.Hardswish(), scriptc.nn.ELU(0.5), scriptc.nn.Mish(),
                                              scriptc.nn.Softplus(2.0), scriptc.nn.Hardtanh(-2.0, 2.0),
                                              scriptc.nn.ReLU6(inplace=True), scriptc.nn.GLU(-1))

        def forward(self, x):
            return self.acts(self.prelu(x) * 3)

    net = Net()
    x = scriptc.tensor(_input(2, 3, 4).astype(np.float32))
    expected = net(x).detach().numpy()
    for compiled in (scriptc.jit.trace(net, (x,)), scriptc.jit.script(net)):
        np.testing.assert_allclose(compiled(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_samples_the_simplex(hard):
    """Each row sums to 1 (one-hot when hard, with the soft sample's gradient: the straight-through estimator)."""
    x = scriptc.randn(4, 5, requires_grad=True)
    y = scriptc.nn.functional.gumbel_softmax(x, tau=0.5, hard=hard)
    np.testing.assert_allclose(y.sum(1).detach().numpy(), np.ones(4), rtol=1e-6)
    if hard:
        assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    (y * scriptc.arange(5.0)).sum().backward()
    assert x.grad is not None and np.abs(x.grad.numpy()).max() > 0
