"""autograd.grad(is_grads_batched=True) against torch 2.13: one backward per row of the batched
grad_outputs, stacked; unused inputs, materialize_grads, create_graph, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

X = np.array([1.0, -2.0, 3.0])
MATRIX = np.random.default_rng(5).standard_normal((3, 3))


def _grads(T, **options):
    x = T.tensor(X, requires_grad=True)
    unused = T.ones(3, requires_grad=True)
    y, total = (x * x).tanh() @ T.tensor(MATRIX), x.sum()
    return T.autograd.grad([y, total], [x, unused], [T.eye(3, dtype=T.float64), T.ones(3, dtype=T.float64)],
                           is_grads_batched=True, **options), x


@pytest.mark.parametrize("options", [{"allow_unused": True}, {"materialize_grads": True}])
def test_batched_gradients_match_torch(options):
    (expected, _), (actual, _) = _grads(torch, **options), _grads(scriptc, **options)
    np.testing.assert_allclose(actual[0].numpy(), expected[0].numpy(), rtol=1e-12)
    if expected[1] is None:
        assert actual[1] is None
    else:
        assert tuple(actual[1].shape) == tuple(expected[1].shape) == (3,)  # materialized after batching
        assert not actual[1].any()


def test_batched_gradients_with_create_graph_are_differentiable():
    results = []
    for T in (torch, scriptc):
        (jacobian, _), x = _grads(T, allow_unused=True, create_graph=True)
        results.append(T.autograd.grad((jacobian ** 2).sum(), x)[0].numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("grad_outputs, error, message", [
    ("T.ones(3)", RuntimeError, r"If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                                r"as the batch dimension.*grad_output\[0\] has a shape of .*Size\(\[\]\) and "
                                r"output\[0\] has a shape of .*Size\(\[3\]\). If you only want"),
    ("[T.eye(3), T.ones(2)]", ValueError, r"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                          r"got sizes \[3, 2\] for the mapped dimension"),
])
def test_batched_errors_match_torch(grad_outputs, error, message):
    for T in (torch, scriptc):
        x = T.tensor(X, requires_grad=True)
        outputs = [x * x] if grad_outputs == "T.ones(3)" else [x * x, x.sum()]
        with pytest.raises(error, match=message):
            T.autograd.grad(outputs, x, eval(grad_outputs, {"T": T}), is_grads_batched=True)


def test_batched_grad_frees_the_graph_unless_retained():
    x = scriptc.tensor(X, requires_grad=True)
    y = x * x
    scriptc.autograd.grad(y, x, scriptc.eye(3, dtype=scriptc.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        scriptc.autograd.grad(y, x, scriptc.eye(3, dtype=scriptc.float64), is_grads_batched=True)
