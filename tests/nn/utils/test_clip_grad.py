"""clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_ and the vector conversions vs torch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _params(module, grads):
    params = []
    for g in grads:
        p = module.nn.Parameter(module.from_numpy(np.zeros_like(g)))
        if g is not None:
            p.grad = module.from_numpy(g.copy())
        params.append(p)
    return params


def _grads(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 4)).astype(np.float32) * 3, rng.standard_normal(5).astype(np.float32)]


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, -math.inf, 0, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    grads = _grads()
    ours, theirs = _params(scriptc, grads), _params(torch, grads)
    total = scriptc.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert isinstance(total, scriptc.Tensor) and total.dim() == 0
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_single_tensor_foreach_and_missing_grads():
    grads = _grads(1)
    ours, theirs = _params(scriptc, grads), _params(torch, grads)
    ours[1].grad = theirs[1].grad = None
    total = scriptc.nn.utils.clip_grad_norm_(ours[0], 1.0, foreach=True)
    expected = torch.nn.utils.clip_grad_norm_(theirs[0], 1.0, foreach=True)
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    assert scriptc.nn.utils.clip_grad_norm_(ours[1:], 1.0).item() == 0.0


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_clip_grad_norm_nonfinite():
    p = scriptc.nn.Parameter(scriptc.zeros(2))
    p.grad = scriptc.tensor([1.0, math.inf])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        scriptc.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isinf(scriptc.nn.utils.clip_grad_norm_([p], 1.0).item())


def test_clip_grad_norm_empty_generator_warns():
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        total = scriptc.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert total.item() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.warns(FutureWarning, match="is now deprecated in favor of"):
            scriptc.nn.utils.clip_grad_norm([], 1.0)


def test_get_total_norm_then_clip_grads_with_norm():
    grads = _grads(2)
    ours, theirs = _params(scriptc, grads), _params(torch, grads)
    total = scriptc.nn.utils.get_total_norm([p.grad for p in ours], 3.0)
    expected = torch.nn.utils.get_total_norm([p.grad for p in theirs], 3.0)
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    scriptc.nn.utils.clip_grads_with_norm_(ours, 2.0, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 2.0, expected)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_clip_grad_value():
    grads = _grads(3)
    ours, theirs = _params(scriptc, grads), _params(torch, grads)
    scriptc.nn.utils.clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_parameters_to_vector_and_back():
    model = scriptc.nn.Linear(3, 2)
    vec = scriptc.nn.utils.parameters_to_vector(model.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec[:6].detach().numpy(), model.weight.detach().numpy().reshape(-1))
    new = scriptc.arange(8).float()
    scriptc.nn.utils.vector_to_parameters(new, model.parameters())
    assert model.bias.tolist() == [6.0, 7.0]
    assert model.weight.shape == (2, 3) and model.weight[1].tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        scriptc.nn.utils.vector_to_parameters([1.0], model.parameters())


def test_parameters_to_vector_is_differentiable():
    w = scriptc.nn.Parameter(scriptc.ones(2, 2))
    (scriptc.nn.utils.parameters_to_vector([w]) * scriptc.arange(4).float()).sum().backward()
    assert w.grad.tolist() == [[0.0, 1.0], [2.0, 3.0]]
