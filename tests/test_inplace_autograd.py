"""In-place ops keep autograd intact: the history recorded before an in-place op is not rewired by
it, and writes through views give gradient to the base (PyTorch's CopySlices), as torch computes."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _both(program, *arrays):
    """Run program(T, *leaves) with scriptc and torch on the same float64 leaves; return both grads."""
    grads = []
    for T in (scriptc, torch):
        leaves = [T.tensor(a, dtype=T.float64, requires_grad=True) for a in arrays]
        program(T, *leaves).sum().backward()
        grads.append([np.zeros_like(a) if t.grad is None else t.grad.numpy() for t, a in zip(leaves, arrays)])
    return grads


def _assert_same_grads(program, *arrays):
    ours, theirs = _both(program, *arrays)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine, expected, rtol=1e-12, atol=1e-12)


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("name, program", [
    ("add_ of a value computed from the target", lambda T, w: (lambda x: x.add_(x + 1))(w * 1)),
    ("mul_ then += then relu_", lambda T, w: (lambda x: (x.mul_(x.exp()).__iadd__(w)).relu_())(w.sin())),
    ("copy_ of a function of the target", lambda T, w: (lambda x: x.copy_(x.tanh() * 3))(w + 0)),
    ("add_ then mul_ then tanh_", lambda T, w: (w * 2).add_(w.exp()).mul_(w).tanh_()),
])
def test_inplace_op_on_a_value_it_reads(name, program):
    _assert_same_grads(program, RNG.standard_normal((3, 4)))


def _setitem_program(T, y, z):
    out = T.zeros(4, 3, dtype=T.float64)
    out[1] = y[0] * 2
    out[2:4] = y.exp()
    out[:, 0].mul_(3)
    out[0, :2] += z
    out[:, 1].relu_()
    return out * T.arange(12, dtype=T.float64).reshape(4, 3)


def test_writes_through_views_reach_the_base_and_the_written_values():
    _assert_same_grads(_setitem_program, RNG.standard_normal((2, 3)), RNG.standard_normal(2))


def test_inplace_on_a_transposed_slice_of_a_computed_tensor():
    def program(T, x):
        b = x * 1
        b.t()[1:3].mul_(b.t()[0:2].exp())
        return b * b
    _assert_same_grads(program, RNG.standard_normal((3, 4)))


@pytest.mark.parametrize("T", [scriptc, torch], ids=["scriptc", "torch"])
def test_overwriting_an_output_a_formula_saved_is_caught_at_backward(T):
    w = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (w * 2).sigmoid_().sigmoid_().sum().backward()


def test_a_view_of_a_leaf_that_requires_grad_is_refused():
    x = scriptc.ones(3, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        x[0].add_(1)


def test_inplace_on_a_detached_alias_leaves_the_source_history_alone():
    x = scriptc.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    d.add_(scriptc.ones(3, requires_grad=True))
    y.sum().backward()
    assert x.grad.tolist() == [2, 2, 2]


@pytest.mark.parametrize("layer", ["Dropout", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                                   "ReLU", "ReLU6", "Hardswish", "SiLU", "LeakyReLU", "ELU", "CELU", "SELU",
                                   "Hardtanh", "Hardsigmoid", "Threshold", "Mish", "RReLU"])
def test_inplace_modules_in_training_give_every_parameter_a_gradient(layer):
    """Dropout(inplace=True) once cut the graph (156 of mnasnet's 158 parameters got no grad)."""
    args = {"Threshold": (0.1, 0.0)}.get(layer, ())
    nn = scriptc.nn
    make = getattr(nn, layer)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), make(*args, inplace=True), nn.Conv2d(4, 2, 1))
    model.train()
    scriptc.manual_seed(0)
    model(scriptc.randn(2, 3, 6, 6)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    reference = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), make(*args, inplace=False),
                              nn.Conv2d(4, 2, 1))
    reference.load_state_dict(model.state_dict())
    for p in model.parameters():
        p.grad = None
    scriptc.manual_seed(0)
    model.load_state_dict(reference.state_dict())
    model(scriptc.randn(2, 3, 6, 6)).sum().backward()
    scriptc.manual_seed(0)
    reference(scriptc.randn(2, 3, 6, 6)).sum().backward()
    for mine, expected in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(mine.grad.numpy(), expected.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("write", [lambda t: t.eq_(2), lambda t: t.lt_(3), lambda t: t.uniform_(),
                                   lambda t: t.bernoulli_(0.5), lambda t: t.zero_(), lambda t: t.fill_(1.0),
                                   lambda t: t.copy_(t.detach() * 0)],
                         ids=["eq_", "lt_", "uniform_", "bernoulli_", "zero_", "fill_", "copy_"])
@pytest.mark.parametrize("through_view", [False, True])
def test_writes_that_ignore_the_old_value_keep_requires_grad_and_give_zero_gradient(write, through_view):
    """torch keeps the target in the graph (EqBackward0, UniformBackward0, ...) with a zero gradient
    for what it held: the overwritten elements' gradient is 0, not None and not cut from the graph."""
    results = []
    for T in (scriptc, torch):
        x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        computed = x * 2
        write(computed[0] if through_view else computed)
        results.append((computed.requires_grad, computed.grad_fn is not None))
        computed.sum().backward()
        results.append(x.grad.numpy())
    ours, theirs = results[:2], results[2:]
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
