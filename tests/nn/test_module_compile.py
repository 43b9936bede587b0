"""Module.compile(): compiling a module's calls in place, as torch's does (the torch.compile tutorial)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("torch_validation_kept")


def mlp(T):
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 2)).eval()
    weights = np.random.default_rng(1)
    with T.no_grad():
        for parameter in model.parameters():
            parameter.copy_(T.tensor(weights.standard_normal(tuple(parameter.shape)).astype(np.float32)))
    return model


def test_a_module_compiled_in_place_keeps_its_state_and_follows_its_weights():
    inputs = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    results = []
    for T in (scriptc, torch):
        model = mlp(T)
        assert model.compile() is None
        assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
        with T.no_grad():
            before = model(T.tensor(inputs)).numpy()
            model[0].weight.mul_(2)  # the compiled program is guarded on the weights
            after = model(T.tensor(inputs)).numpy()
        results.append((before, after))
    for ours, theirs in zip(results[0], results[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    compiled = mlp(scriptc)
    compiled.compile()
    with scriptc.no_grad():
        compiled(scriptc.tensor(inputs))
    assert len(compiled._compiled_call_impl._scriptc_compiled._programs) == 1


def test_a_compiled_module_trains_through_its_compiled_calls():
    inputs = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    grads = []
    for T in (scriptc, torch):
        model = mlp(T).train()
        model.compile()
        model(T.tensor(inputs)).sum().backward()
        grads.append(model[0].weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)
