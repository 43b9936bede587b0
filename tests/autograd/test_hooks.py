"""Tensor.register_hook and register_post_accumulate_grad_hook against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _values(lib):
    return lib.tensor(np.random.default_rng(0).standard_normal(4), requires_grad=True)


def _hooked_graph(lib):
    x = _values(lib)
    seen = []
    y = x * 3
    y.register_hook(lambda g: seen.append(("y", g.clone())))
    replace = y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: seen.append(("y after", g.clone())))
    x.register_hook(lambda g: seen.append(("x", g.clone())))
    x.register_hook(lambda g: g + 1)
    y.retain_grad()
    (y * y).sum().backward(retain_graph=True)
    first = (x.grad.clone(), y.grad.clone())
    replace.remove()
    x.grad = None
    (y * y).sum().backward()
    return first + (x.grad, [(name, g.detach().numpy()) for name, g in seen])


def test_hooks_see_and_replace_gradients_like_torch():
    expected, ours = _hooked_graph(torch), _hooked_graph(scriptc)
    for a, b in zip(expected[:3], ours[:3]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)
    assert [name for name, _ in ours[3]] == [name for name, _ in expected[3]]
    for (_, a), (_, b) in zip(expected[3], ours[3]):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_hooks_run_for_autograd_grad_and_post_accumulate_hook():
    for lib in (torch, scriptc):
        x = _values(lib)
        x.register_hook(lambda g: g * 2)
        (g,) = lib.autograd.grad((x * x).sum(), x)
        np.testing.assert_allclose(g.numpy(), 4 * x.detach().numpy(), rtol=1e-6)
        calls = []
        handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
        (x * 1).sum().backward()
        np.testing.assert_allclose(calls[0].numpy(), np.full(4, 2.0))
        handle.remove()
        (x * 1).sum().backward()
        assert len(calls) == 1


def test_hook_errors_worded_as_torch():
    for lib in (torch, scriptc):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)
        y = x * 2
        y.register_hook(lambda g: g[:1])
        with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
            y.sum().backward()


def test_hooks_fire_once_with_the_whole_gradient_under_create_graph():
    for lib in (torch, scriptc):
        x = lib.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
        h = x * 2
        seen = []
        h.register_hook(lambda g: seen.append(g.detach().clone()))
        h.retain_grad()
        loss = lib.nn.functional.layer_norm(h, (3,)).pow(2).sum() + h.sum()
        loss.backward(create_graph=True)
        assert len(seen) == 1
        np.testing.assert_allclose(h.grad.detach().numpy(), seen[0].numpy())


def test_node_prehooks_and_hooks_like_torch():
    results = []
    for lib in (torch, scriptc):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        y = x * w
        log = []
        y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 2,))
        handle = y.grad_fn.register_hook(
            lambda grad_inputs, grad_outputs: log.append((len(grad_inputs), len(grad_outputs)))
            or (grad_inputs[0], grad_inputs[1] * 0))
        y.sum().backward(retain_graph=True)
        handle.remove()
        y.sum().backward()
        results.append((x.grad.numpy().copy(), w.grad.numpy().copy(), log))
    np.testing.assert_allclose(results[1][0], results[0][0])
    np.testing.assert_allclose(results[1][1], results[0][1])
    assert results[1][2] == results[0][2]


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_hook_that_changes_the_dtype_is_refused_as_torch(create_graph):
    for lib in (torch, scriptc):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g.double())
        with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the type of value \(was \w+\.FloatTensor "
                                               r"got \w+\.DoubleTensor\)$"):
            lib.autograd.grad((y * 3).sum(), x, create_graph=create_graph)
