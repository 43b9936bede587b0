"""The forward-pre-hook weight_norm and spectral_norm (torch.nn.utils.weight_norm / spectral_norm) vs torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from tests.nn.utils.test_parametrize import _copy_state, _forward_backward, _linear_pair, steps_match

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook_matches_torch(dim):
    ours, theirs = _linear_pair(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(theirs, dim=dim)
    with pytest.warns(FutureWarning, match="is deprecated in favor of"):
        scriptc.nn.utils.weight_norm(ours, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_state(ours, theirs)
    x = np.random.default_rng(8).standard_normal((3, 4)).astype(np.float32)
    (y, grads), (y_t, grads_t) = _forward_backward(ours, scriptc, x), _forward_backward(theirs, torch, x)
    np.testing.assert_allclose(y, y_t, rtol=1e-5, atol=1e-6)
    for name in grads_t:
        np.testing.assert_allclose(grads[name], grads_t[name], rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        scriptc.nn.utils.weight_norm(ours, dim=dim)
    scriptc.nn.utils.remove_weight_norm(ours)
    assert sorted(ours.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(ours(scriptc.from_numpy(x)).detach().numpy(), y, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        scriptc.nn.utils.remove_weight_norm(ours)


@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_hook_matches_torch(training):
    ours, theirs = _linear_pair(9, out_features=5, in_features=3)
    torch.nn.utils.spectral_norm(theirs)
    scriptc.nn.utils.spectral_norm(ours)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _copy_state(ours, theirs)
    steps_match(ours, theirs, np.random.default_rng(10).standard_normal((2, 3)).astype(np.float32), training)
    np.testing.assert_allclose(ours.weight_u.numpy(), theirs.weight_u.numpy(), rtol=1e-5, atol=1e-6)
    scriptc.nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert sorted(ours.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_state_dict_of_the_hook_weight_norm_loads_into_the_parametrization():
    old, new = scriptc.nn.Linear(4, 3), scriptc.nn.Linear(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        scriptc.nn.utils.weight_norm(old)
    scriptc.nn.utils.parametrizations.weight_norm(new)
    new.load_state_dict(old.state_dict())
    x = scriptc.randn(2, 4)
    np.testing.assert_allclose(new(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-6)
