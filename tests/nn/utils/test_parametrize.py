"""parametrize and parametrizations.weight_norm / spectral_norm against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc.nn.utils import parametrize

torch = pytest.importorskip("torch")


def _linear_pair(seed=0, out_features=3, in_features=4):
    rng = np.random.default_rng(seed)
    theirs = torch.nn.Linear(in_features, out_features)
    ours = scriptc.nn.Linear(in_features, out_features)
    state = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) for k, v in theirs.state_dict().items()}
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    ours.load_state_dict(state)
    return ours, theirs


def _copy_state(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def _forward_backward(module, backend, x):
    y = module(backend.from_numpy(x.copy()))
    (y * y).sum().backward()
    return y.detach().numpy(), {n: p.grad.numpy().copy() for n, p in module.named_parameters()}


def steps_match(ours, theirs, x, training: bool, steps: int = 3) -> None:
    """Forward and backward `steps` times (power iterations advance in training mode): outputs and
    gradients equal torch's each time."""
    ours.train(training)
    theirs.train(training)
    for _ in range(steps):
        for m in (ours, theirs):
            m.zero_grad()
        (y, grads), (y_t, grads_t) = _forward_backward(ours, scriptc, x), _forward_backward(theirs, torch, x)
        np.testing.assert_allclose(y, y_t, rtol=1e-5, atol=1e-5)
        assert grads.keys() == grads_t.keys()
        for name in grads:
            np.testing.assert_allclose(grads[name], grads_t[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_state_dict_forward_and_gradients(dim):
    ours, theirs = _linear_pair()
    scriptc.nn.utils.parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-6)
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    (y, grads), (y_t, grads_t) = _forward_backward(ours, scriptc, x), _forward_backward(theirs, torch, x)
    np.testing.assert_allclose(y, y_t, rtol=1e-5, atol=1e-6)
    assert grads.keys() == grads_t.keys()
    for name in grads:
        np.testing.assert_allclose(grads[name], grads_t[name], rtol=1e-4, atol=1e-5)


def test_weight_norm_conv_shapes_and_torch_state_dict_loads():
    theirs = torch.nn.Conv2d(2, 3, 3)
    ours = scriptc.nn.Conv2d(2, 3, 3)
    torch.nn.utils.parametrizations.weight_norm(theirs)
    scriptc.nn.utils.parametrizations.weight_norm(ours)
    assert ours.parametrizations.weight.original0.shape == (3, 1, 1, 1)
    _copy_state(ours, theirs)
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(scriptc.from_numpy(x)).detach().numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_power_iteration_follows_torch(training):
    ours, theirs = _linear_pair(3, out_features=5, in_features=4)
    torch.nn.utils.parametrizations.spectral_norm(theirs)
    scriptc.nn.utils.parametrizations.spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_state(ours, theirs)
    steps_match(ours, theirs, np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32), training)
    np.testing.assert_allclose(ours.parametrizations.weight[0]._u.numpy(),
                               theirs.parametrizations.weight[0]._u.numpy(), rtol=1e-5, atol=1e-6)


def test_spectral_norm_weight_has_unit_spectral_norm_and_errors():
    module = scriptc.nn.Linear(6, 4)
    scriptc.nn.utils.parametrizations.spectral_norm(module, n_power_iterations=30)
    module.eval()
    sigma = np.linalg.svd(module.weight.detach().numpy(), compute_uv=False)[0]
    assert sigma == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        scriptc.nn.utils.parametrizations.spectral_norm(scriptc.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        scriptc.nn.utils.parametrizations.spectral_norm(scriptc.nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        scriptc.nn.utils.parametrizations.spectral_norm(scriptc.nn.Linear(2, 2), name="kernel")


class Scale(scriptc.nn.Module):
    def forward(self, x):
        return x * 2

    def right_inverse(self, x):
        return x / 2


def test_register_parametrization_property_class_and_optimizer():
    module = scriptc.nn.Linear(3, 3)
    weight = module.weight
    parametrize.register_parametrization(module, "weight", Scale())
    assert type(module).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(module) is scriptc.nn.Linear
    assert parametrize.is_parametrized(module) and parametrize.is_parametrized(module, "weight")
    assert not parametrize.is_parametrized(module, "bias")
    assert module.parametrizations.weight.original is weight
    np.testing.assert_allclose(module.weight.detach().numpy(), 2 * weight.detach().numpy())
    assert isinstance(scriptc.nn.Linear(3, 3), scriptc.nn.Linear) and not hasattr(type(scriptc.nn.Linear(3, 3)),
                                                                                  "parametrizations")
    module.weight = scriptc.ones(3, 3)
    np.testing.assert_allclose(weight.detach().numpy(), 0.5)
    opt = scriptc.optim.SGD(module.parameters(), lr=1.0)
    module(scriptc.ones(1, 3)).sum().backward()
    opt.step()
    np.testing.assert_allclose(weight.detach().numpy(), 0.5 - 2.0)


def test_stacked_parametrizations_compose_and_cache():
    module = scriptc.nn.Linear(2, 2)
    parametrize.register_parametrization(module, "weight", Scale())
    parametrize.register_parametrization(module, "weight", Scale())
    original = module.parametrizations.weight.original.detach().numpy()
    np.testing.assert_allclose(module.weight.detach().numpy(), 4 * original)
    with parametrize.cached():
        assert module.weight is module.weight
    assert module.weight is not module.weight
    module.weight = scriptc.full((2, 2), 8.0)
    np.testing.assert_allclose(module.parametrizations.weight.original.detach().numpy(), 2.0)


def test_remove_parametrizations_leaves_value_or_original():
    module = scriptc.nn.Linear(2, 2)
    original = module.weight.detach().numpy().copy()
    parametrize.register_parametrization(module, "weight", Scale())  # right_inverse stores original / 2
    parametrize.remove_parametrizations(module, "weight")
    assert type(module) is scriptc.nn.Linear and list(module.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(module.weight.detach().numpy(), original)
    parametrize.register_parametrization(module, "weight", Scale())
    parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
    np.testing.assert_allclose(module.weight.detach().numpy(), original / 2)
    assert isinstance(module.weight, scriptc.nn.Parameter)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(module, "weight")
    scriptc.nn.utils.parametrizations.weight_norm(module)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(module, "weight")
    np.testing.assert_allclose(module.weight.detach().numpy(), original / 2, rtol=1e-6)


def test_registration_errors_match_torch():
    class Bad(scriptc.nn.Module):
        def forward(self, x):
            return x[0]

    with pytest.raises(ValueError, match="Registering a parametrization may not change the shape of the tensor"):
        parametrize.register_parametrization(scriptc.nn.Linear(2, 2), "weight", Bad())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name"):
        parametrize.register_parametrization(scriptc.nn.Linear(2, 2), "kernel", Scale())
    module = scriptc.nn.Linear(2, 2)
    parametrize.register_parametrization(module, "weight", Scale())
    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless the `unsafe` flag"):
        parametrize.register_parametrization(module, "weight", Bad())


def test_transfer_parametrizations_shares_originals():
    source, target = scriptc.nn.Linear(2, 2), scriptc.nn.Linear(2, 2)
    scriptc.nn.utils.parametrizations.weight_norm(source)
    parametrize.transfer_parametrizations_and_params(source, target)
    assert target.parametrizations.weight.original0 is source.parametrizations.weight.original0
    np.testing.assert_allclose(target.weight.detach().numpy(), source.weight.detach().numpy())


@pytest.mark.parametrize("shape,orthogonal_map", [((4, 4), None), ((4, 4), "cayley"), ((5, 3), None),
                                                  ((3, 5), "householder"), ((5, 3), "matrix_exp")])
def test_orthogonal_matches_torch_and_is_orthogonal(shape, orthogonal_map):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal(shape)
    theirs = torch.nn.Linear(shape[1], shape[0], dtype=torch.float64)
    ours = scriptc.nn.Linear(shape[1], shape[0]).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(weight))
    ours.weight.data = scriptc.from_numpy(weight.copy())
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orthogonal_map)
    scriptc.nn.utils.parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    q = ours.weight.detach().numpy()
    small = min(shape)
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    _copy_state(ours, theirs)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-10)
    original = ours.parametrizations.weight.original
    ours.weight.sum().backward()
    theirs.weight.sum().backward()
    np.testing.assert_allclose(original.grad.numpy(), theirs.parametrizations.weight.original.grad.numpy(),
                               rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_assigning_to_householder_without_trivialization_matches_torch(shape):
    """right_inverse stores geqrf's reflectors of the assigned orthogonal matrix (diag(R) > 0)."""
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((max(shape), min(shape))))[0]
    q = q if shape[0] >= shape[1] else q.T
    originals = []
    for T in (torch, scriptc):
        layer = T.nn.Linear(shape[1], shape[0])
        T.nn.utils.parametrizations.orthogonal(layer, orthogonal_map="householder", use_trivialization=False)
        with T.no_grad():
            layer.weight = T.tensor(q, dtype=T.float32)
        np.testing.assert_allclose(layer.weight.detach().numpy(), q, atol=1e-6)
        originals.append(layer.parametrizations.weight.original.detach().numpy())
    np.testing.assert_allclose(originals[1], originals[0], atol=1e-5)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        scriptc.nn.utils.parametrizations.orthogonal(scriptc.nn.Linear(2, 2), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
        scriptc.nn.utils.parametrizations.orthogonal(scriptc.nn.Linear(2, 2), orthogonal_map="qr")


def test_spectral_norm_of_a_transposed_convolution_normalizes_over_its_output_channels():
    for module in (torch, scriptc):
        conv = module.nn.ConvTranspose2d(3, 5, 2)
        module.nn.utils.parametrizations.spectral_norm(conv)
        assert tuple(conv.parametrizations.weight[0]._u.shape) == (5,)
        assert tuple(conv.parametrizations.weight[0]._v.shape) == (12,)
