"""Autograd semantics: accumulation, retain_graph, grad(), grad modes, leaves, version checks."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.autograd import gradcheck


def test_backward_accumulates_into_leaves():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [2 + 3, 4 + 3]


def test_shared_subexpression_sums_gradients():
    x = torch.tensor([3.0], requires_grad=True)
    y = x * 2
    z = y * y + y
    z.backward()
    assert x.grad.item() == pytest.approx(2 * (2 * 6 + 1))


def test_nonscalar_backward_needs_gradient():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()
    y.backward(torch.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2, 4, 6]


def test_second_backward_needs_retain_graph():
    x = torch.ones(2, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.e * np.ones(2), rtol=1e-6)


def test_autograd_grad_returns_without_accumulating():
    x = torch.tensor([2.0], requires_grad=True)
    w = torch.tensor([5.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = torch.autograd.grad(y, [x, w])
    assert gx.item() == 5 and gw.item() == 2 and x.grad is None
    unused = torch.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used"):
        torch.autograd.grad((x * 2).sum(), [unused])
    assert torch.autograd.grad((x * 2).sum(), [unused], allow_unused=True) == (None,)


def test_no_grad_enable_grad_and_decorator():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        y = x * 2
        with torch.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @torch.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    assert torch.is_grad_enabled()


def test_leaf_semantics_detach_and_requires_grad():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    d = y.detach()
    assert d.is_leaf and not d.requires_grad
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).requires_grad_()
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [1, 1] and x.grad.tolist() == [2, 2]


def test_inplace_on_leaf_that_requires_grad_is_refused():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with torch.no_grad():
        x.add_(1)
    assert x.tolist() == [2, 2]


def test_modifying_a_saved_tensor_fails_at_backward():
    a = torch.ones(3, requires_grad=True)
    b = a.exp()
    c = b * 2
    b.add_(1)
    assert b._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (c.sum() + b.exp().sum()).backward()


def test_inplace_ops_record_history():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    b.mul_(3)
    b += 1
    b.sum().backward()
    assert a.grad.tolist() == [3, 3]


def test_gradcheck_detects_a_wrong_formula():
    x = torch.tensor(np.random.rand(3), requires_grad=True)
    x = x.double().detach().requires_grad_()
    assert gradcheck(lambda t: (t * t).sin(), [x])
    with pytest.raises(Exception, match="Jacobian mismatch"):
        gradcheck(lambda t: torch.tensor(t.detach().numpy() ** 2, requires_grad=True) * 1 + t * 0, [x])


def test_next_functions_and_names():
    x = torch.ones(2, requires_grad=True)
    y = (x * 2).sum()
    assert y.grad_fn.name() == "SumBackward0"
    fn, _ = y.grad_fn.next_functions[0]
    assert fn.name() == "MulBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_weight_used_at_every_step_sums_its_products(dtype):
    # linear's weight gradients are summed as one product of the stacked steps' factors (some before
    # the sum is read, when the factors outgrow the product): the sum must be the per-step sum.
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w_np, xs = rng.standard_normal((6, 5)).astype(dtype), rng.standard_normal((12, 2, 5)).astype(dtype)
    results = []
    for T in (torch, real):
        w = T.tensor(w_np, requires_grad=True)
        x = T.tensor(xs, requires_grad=True)
        loss = sum(((T.nn.functional.linear(x[t], w) ** 2) * (t + 1)).sum() for t in range(len(xs)))
        results.append([g.detach().numpy() for g in T.autograd.grad(loss, [w, x], retain_graph=True)])
        loss.backward()
        results.append([w.grad.numpy(), x.grad.numpy()])
    tol = 1e-4 if dtype == "float32" else 1e-10
    for ours, theirs in zip(results[:2], results[2:]):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
