"""torch.func.stack_module_state, replace_all_batch_norm_modules_ and linearize against torch 2.13:
the model-ensembling recipe (stacked state under vmap through functional_call) and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)


def mlp(T, seed: int):
    model = T.nn.Sequential(T.nn.Linear(6, 8), T.nn.ReLU(), T.nn.Linear(8, 3))
    weights = np.random.default_rng(seed)
    with T.no_grad():
        for parameter in model.parameters():
            parameter.copy_(T.tensor(weights.standard_normal(tuple(parameter.shape)).astype(np.float32)))
    return model


def ensemble(T, inputs: np.ndarray, in_dims):
    models = [mlp(T, seed) for seed in range(3)]
    params, buffers = T.func.stack_module_state(models)
    base = models[0]

    def call(p, b, x):
        return T.func.functional_call(base, (p, b), (x,))
    return params, T.func.vmap(call, in_dims=in_dims)(params, buffers, T.tensor(inputs))


@pytest.mark.parametrize("shape, in_dims", [((4, 6), (0, 0, None)), ((3, 4, 6), (0, 0, 0))],
                         ids=["one minibatch", "a minibatch per model"])
def test_ensemble_of_stacked_models_matches_torch(shape, in_dims):
    inputs = rng.standard_normal(shape).astype(np.float32)
    params, ours = ensemble(scriptc, inputs, in_dims)
    their_params, theirs = ensemble(torch, inputs, in_dims)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert list(params) == list(their_params) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert tuple(params["0.weight"].shape) == (3, 8, 6)
    assert params["0.weight"].is_leaf and params["0.weight"].requires_grad


def test_stacked_parameters_are_new_leaves_that_take_the_gradient():
    models = [mlp(scriptc, seed) for seed in range(2)]
    params, _ = scriptc.func.stack_module_state(models)
    params["2.bias"].sum().backward()
    np.testing.assert_array_equal(params["2.bias"].grad.numpy(), np.ones((2, 3), np.float32))
    assert all(p.grad is None for m in models for p in m.parameters())


@pytest.mark.parametrize("models, message", [
    (lambda T: [], "Expected at least one model, got 0"),
    (lambda T: [mlp(T, 0), mlp(T, 1).eval()], "Expected all models to have the same training/eval mode"),
    (lambda T: [T.nn.Linear(2, 2), T.nn.Sequential(T.nn.Linear(2, 2))], "Expected all models to be of the same class"),
], ids=["none", "mixed modes", "mixed classes"])
def test_stack_module_state_errors_match_torch(models, message):
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match=message):
            T.func.stack_module_state(models(T))


def test_replace_all_batch_norm_modules_normalizes_by_the_batch_in_eval_mode():
    inputs = rng.standard_normal((5, 3, 4, 4)).astype(np.float32)
    results = []
    for T in (scriptc, torch):
        model = T.nn.Sequential(T.nn.Conv2d(3, 4, 3), T.nn.BatchNorm2d(4), T.nn.Flatten(), T.nn.BatchNorm1d(16))
        weights = np.random.default_rng(2)
        with T.no_grad():
            for parameter in model.parameters():
                parameter.copy_(T.tensor(weights.standard_normal(tuple(parameter.shape)).astype(np.float32)))
        assert T.func.replace_all_batch_norm_modules_(model) is model
        norm = model[1]
        assert norm.running_mean is None and norm.running_var is None and not norm.track_running_stats
        results.append(model.eval()(T.tensor(inputs)).detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-5)


def test_linearize_gives_the_jvp_at_the_primals():
    x, tangent = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    ours = scriptc.func.linearize(lambda v: v.sin() * v, scriptc.tensor(x))
    theirs = torch.func.linearize(lambda v: v.sin() * v, torch.tensor(x))
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours[1](scriptc.tensor(tangent)).numpy(),
                               theirs[1](torch.tensor(tangent)).detach().numpy(), rtol=1e-5, atol=1e-6)
