"""torch.utils.checkpoint: gradients equal the plain forward's, dropout repeats, both variants' semantics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from scriptc.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

nn = scriptc.nn


def _model():
    scriptc.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))


def _gradients(model, x, run):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    scriptc.manual_seed(7)
    y = run(model, x)
    (y * y).sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


RUNS = {
    "reentrant": lambda m, x: checkpoint(m, x, use_reentrant=True),
    "non-reentrant": lambda m, x: checkpoint(m, x, use_reentrant=False),
    "sequential": lambda m, x: checkpoint_sequential(m, 2, x, use_reentrant=False),
    "sequential-reentrant": lambda m, x: checkpoint_sequential(m, 3, x, use_reentrant=True),
    "nested": lambda m, x: checkpoint(lambda a: m[3:](checkpoint(m[:3], a, use_reentrant=False)), x,
                                      use_reentrant=False),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_gradients_equal_the_plain_forward_with_dropout(name):
    model = _model()
    x = scriptc.randn(3, 4, requires_grad=True)
    expected = _gradients(model, x, lambda m, a: m(a))
    got = _gradients(model, x, RUNS[name])
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reentrant", [True, False])
def test_the_output_comes_from_one_checkpoint_node(reentrant):
    model = _model()
    x = scriptc.randn(3, 4, requires_grad=True)
    y = checkpoint(model, x, use_reentrant=reentrant)
    assert y.grad_fn.name() == "CheckpointBackward0"
    # reentrant: the input only; non-reentrant: the input and the six parameters
    assert len(y.grad_fn.next_functions) == (1 if reentrant else 7)


def test_random_state_after_backward_is_as_without_recomputation():
    model = _model()
    x = scriptc.randn(3, 4, requires_grad=True)
    scriptc.manual_seed(3)
    model(x).sum().backward()
    expected = scriptc.rand(5).numpy()
    scriptc.manual_seed(3)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    np.testing.assert_array_equal(scriptc.rand(5).numpy(), expected)


def test_without_preserving_rng_the_recomputed_dropout_differs():
    model = _model()
    x = scriptc.randn(3, 4, requires_grad=True)
    expected = _gradients(model, x, lambda m, a: m(a))
    got = _gradients(model, x, lambda m, a: checkpoint(m, a, use_reentrant=False, preserve_rng_state=False))
    assert any(not np.array_equal(a, b) for a, b in zip(got, expected))


def test_non_reentrant_reaches_parameters_when_no_input_requires_grad_and_supports_grad():
    model = _model().eval()
    x = scriptc.randn(3, 4)
    y = checkpoint(model, x, use_reentrant=False)
    assert y.requires_grad and y.grad_fn.name() == "CheckpointBackward0"
    weight = model[0].weight
    (found,) = scriptc.autograd.grad(y.sum(), [weight])
    (expected,) = scriptc.autograd.grad(model(x).sum(), [weight])
    np.testing.assert_array_equal(found.numpy(), expected.numpy())
    assert weight.grad is None


def test_reentrant_refuses_autograd_grad_as_torch():
    model = _model().eval()
    x = scriptc.randn(3, 4, requires_grad=True)
    y = checkpoint(model, x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                                           "\\.grad\\(\\)"):
        scriptc.autograd.grad(y, [x])
    assert model[0].weight.grad is None


def test_reentrant_without_inputs_requiring_grad_warns_and_gives_no_gradients():
    model = _model().eval()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be None"):
        y = checkpoint(model, scriptc.randn(3, 4), use_reentrant=True)
    assert not y.requires_grad


def test_several_outputs_keyword_arguments_and_non_tensor_values():
    w = nn.Parameter(scriptc.randn(3, 3))

    def fn(a, b, *, scale):
        return {"sum": (a @ w) * scale, "pair": (b * w, 7), "count": scriptc.tensor([1, 2])}

    a, b = scriptc.randn(2, 3, requires_grad=True), scriptc.randn(3, requires_grad=True)
    out = checkpoint(fn, a, b, scale=2.0, use_reentrant=False)
    assert out["pair"][1] == 7 and out["count"].tolist() == [1, 2] and not out["count"].requires_grad
    (out["sum"].sum() + (out["pair"][0] ** 2).sum()).backward()
    got = [t.grad.numpy().copy() for t in (w, a, b)]
    for t in (w, a, b):
        t.grad = None
    plain = fn(a, b, scale=2.0)
    (plain["sum"].sum() + (plain["pair"][0] ** 2).sum()).backward()
    for g, t in zip(got, (w, a, b)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(fn, a, b, scale=2.0, use_reentrant=True)


def test_an_input_passed_twice_and_a_non_leaf_input():
    w = nn.Parameter(scriptc.randn(3))
    base = scriptc.randn(3, requires_grad=True)
    for reentrant in (True, False):
        x = base * 3
        checkpoint(lambda a, b: (a * b * w).sum(), x, x, use_reentrant=reentrant).backward()
        np.testing.assert_allclose(base.grad.numpy(), (2 * 9 * base * w).detach().numpy(), rtol=1e-5)
        base.grad = None


def test_backward_twice_with_retain_graph():
    model = _model().eval()
    x = scriptc.randn(2, 4, requires_grad=True)
    y = checkpoint(model, x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-6)


def test_under_no_grad_it_is_the_plain_call():
    model = _model().eval()
    with scriptc.no_grad():
        y = checkpoint(model, scriptc.randn(2, 4, requires_grad=True), use_reentrant=False)
    assert not y.requires_grad and y.grad_fn is None


def test_use_reentrant_must_be_given_or_it_warns():
    x = scriptc.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda a: a * 2, x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter should be passed"):
        checkpoint_sequential([lambda a: a * 2, lambda a: a + 1], 2, x)


def test_context_fn_wraps_forward_and_recomputation():
    seen = []

    class Marker:
        def __init__(self, label):
            self.label = label

        def __enter__(self):
            seen.append(self.label)

        def __exit__(self, *exc):
            return False

    x = scriptc.randn(2, requires_grad=True)
    y = checkpoint(lambda a: a.exp(), x, use_reentrant=False, context_fn=lambda: (Marker("fwd"), Marker("re")))
    y.sum().backward()
    assert seen == ["fwd", "re"]
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when use_reentrant=False."):
        checkpoint(lambda a: a, x, use_reentrant=True, context_fn=lambda: (Marker("a"), Marker("b")))


def test_determinism_check_catches_a_recomputation_with_other_shapes():
    calls = []

    def changing(a):
        calls.append(1)
        return a[: len(calls) + 1] * 2

    x = scriptc.randn(4, requires_grad=True)
    y = checkpoint(changing, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        y.sum().backward()
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = checkpoint(changing, x, use_reentrant=False, determinism_check="none")
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            y.sum().backward()
