"""nn.utils.prune against torch 2.13: masks, the weight_orig/weight_mask reparametrization and its
hook, iterative pruning through a PruningContainer, global pruning, remove, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.torch_errors import assert_misuse_like_torch

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # torch loads it only when asked

rng = np.random.default_rng(17)


def _net(T, state):
    net = T.nn.Sequential(T.nn.Conv2d(2, 4, 3), T.nn.Flatten(), T.nn.Linear(16, 3))
    net.load_state_dict({k: T.tensor(v) for k, v in state.items()})
    return net


def _state():
    return {"0.weight": rng.standard_normal((4, 2, 3, 3)).astype(np.float32),
            "0.bias": rng.standard_normal(4).astype(np.float32),
            "2.weight": rng.standard_normal((3, 16)).astype(np.float32),
            "2.bias": rng.standard_normal(3).astype(np.float32)}


def _scores(shape):
    return rng.standard_normal(shape).astype(np.float32)


SCORES = {"conv": _scores((4, 2, 3, 3)), "linear": _scores((3, 16))}

# each: f(T, net) prunes in place
STEPS = {
    "l1_fraction": lambda T, net: T.nn.utils.prune.l1_unstructured(net[0], "weight", amount=0.3),
    "l1_count_bias": lambda T, net: T.nn.utils.prune.l1_unstructured(net[2], "bias", amount=1),
    "l1_scores": lambda T, net: T.nn.utils.prune.l1_unstructured(
        net[2], "weight", amount=10, importance_scores=T.tensor(SCORES["linear"])),
    "ln_structured_dim0": lambda T, net: T.nn.utils.prune.ln_structured(net[0], "weight", amount=0.5, n=2, dim=0),
    "ln_structured_l1_last": lambda T, net: T.nn.utils.prune.ln_structured(net[2], "weight", amount=5, n=1, dim=-1),
    "ln_structured_inf_scores": lambda T, net: T.nn.utils.prune.ln_structured(
        net[0], "weight", amount=1, n=float("inf"), dim=1, importance_scores=T.tensor(SCORES["conv"])),
    "identity": lambda T, net: T.nn.utils.prune.identity(net[0], "bias"),
    "custom": lambda T, net: T.nn.utils.prune.custom_from_mask(net[2], "bias", mask=T.tensor([1.0, 0.0, 1.0])),
    "iterative": lambda T, net: [
        T.nn.utils.prune.l1_unstructured(net[0], "weight", amount=0.2),
        T.nn.utils.prune.ln_structured(net[0], "weight", amount=1, n=2, dim=0),
        T.nn.utils.prune.l1_unstructured(net[0], "weight", amount=5),
        T.nn.utils.prune.custom_from_mask(net[0], "weight", mask=T.tensor(SCORES["conv"] > -1.0)),
        T.nn.utils.prune.ln_structured(net[0], "weight", amount=1, n=1, dim=1)],
    "global": lambda T, net: T.nn.utils.prune.global_unstructured(
        [(net[0], "weight"), (net[2], "weight"), (net[2], "bias")], pruning_method=T.nn.utils.prune.L1Unstructured,
        amount=40),
    "global_after_local": lambda T, net: [
        T.nn.utils.prune.ln_structured(net[2], "weight", amount=2, n=2, dim=0),
        T.nn.utils.prune.global_unstructured(
            ((net[0], "weight"), (net[2], "weight")), pruning_method=T.nn.utils.prune.L1Unstructured, amount=0.5,
            importance_scores={(net[0], "weight"): T.tensor(SCORES["conv"])})],
}


def _run(T, state, step, x):
    net = _net(T, state)
    step(T, net)
    out = net(T.tensor(x))
    out.square().sum().backward()
    params = {k: (v.detach().numpy().copy(), None if v.grad is None else v.grad.numpy().copy())
              for k, v in net.named_parameters()}
    buffers = {k: v.numpy().copy() for k, v in net.named_buffers()}
    pruned = T.nn.utils.prune.is_pruned(net)
    hooks = [type(h).__name__ for m in net for h in m._forward_pre_hooks.values()]
    for module in net:
        for hook in list(module._forward_pre_hooks.values()):
            T.nn.utils.prune.remove(module, hook._tensor_name)
    removed = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    return out.detach().numpy(), params, buffers, pruned, hooks, removed, T.nn.utils.prune.is_pruned(net)


@pytest.mark.parametrize("step", sorted(STEPS))
def test_pruning_matches_torch(step):
    state = _state()
    x = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    ours = _run(scriptc, state, STEPS[step], x)
    theirs = _run(torch, state, STEPS[step], x)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)
    assert ours[1].keys() == theirs[1].keys() and ours[2].keys() == theirs[2].keys()
    for key, (value, grad) in theirs[1].items():
        np.testing.assert_allclose(ours[1][key][0], value, rtol=1e-6, err_msg=key)
        np.testing.assert_allclose(ours[1][key][1], grad, rtol=1e-4, atol=1e-4, err_msg=key)
    for key, mask in theirs[2].items():
        assert ours[2][key].dtype == mask.dtype, key
        np.testing.assert_array_equal(ours[2][key], mask, err_msg=key)
    assert ours[3:5] == theirs[3:5] and ours[6] == theirs[6] is False
    assert ours[5].keys() == theirs[5].keys()
    for key, value in theirs[5].items():
        np.testing.assert_allclose(ours[5][key], value, rtol=1e-6, err_msg=key)


def test_random_pruning_counts_and_structure():
    scriptc.manual_seed(3)
    layer = scriptc.nn.Linear(10, 6)
    scriptc.nn.utils.prune.random_unstructured(layer, "weight", amount=0.25)
    assert int((layer.weight_mask == 0).sum()) == 15
    scriptc.nn.utils.prune.random_structured(layer, "weight", amount=2, dim=0)
    rows_pruned = (layer.weight_mask.sum(1) == 0)
    assert int(rows_pruned.sum()) >= 2
    hook = next(iter(layer._forward_pre_hooks.values()))
    assert isinstance(hook, scriptc.nn.utils.prune.PruningContainer) and len(hook) == 2
    assert [type(m).__name__ for m in hook] == ["RandomUnstructured", "RandomStructured"]
    np.testing.assert_array_equal(layer.weight.detach().numpy(),
                                  (layer.weight_orig * layer.weight_mask).detach().numpy())
    scriptc.manual_seed(3)
    again = scriptc.nn.Linear(10, 6)
    scriptc.nn.utils.prune.random_unstructured(again, "weight", amount=0.25)
    scriptc.nn.utils.prune.random_structured(again, "weight", amount=2, dim=0)
    np.testing.assert_array_equal(again.weight_mask.numpy(), layer.weight_mask.numpy())


def test_method_prune_and_state_dict_names():
    for T in (scriptc, torch):
        method = T.nn.utils.prune.L1Unstructured(amount=2)
        pruned = method.prune(T.tensor([3.0, -1.0, 0.5, 2.0]))
        assert pruned.tolist() == [3.0, 0.0, 0.0, 2.0]
        layer = T.nn.utils.prune.l1_unstructured(T.nn.Linear(2, 2), "weight", 0.5)
        assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_mask"]


def _misuses(T):
    prune = T.nn.utils.prune
    return [
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount="half"),
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount=1.5),
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount=-1),
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount=5),
        lambda: prune.ln_structured(T.nn.Linear(2, 2), "bias", amount=1, n=2, dim=0),
        lambda: prune.ln_structured(T.nn.Linear(2, 2), "weight", amount=1, n=2, dim=2),
        lambda: prune.random_structured(T.nn.Linear(2, 2), "weight", amount=3, dim=0),
        lambda: prune.remove(T.nn.Linear(2, 2), "weight"),
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "weight", 1, importance_scores=T.ones(3)),
        lambda: prune.global_unstructured([(T.nn.Linear(2, 2), "weight")], prune.LnStructured, amount=1, n=2),
        lambda: prune.global_unstructured(3, prune.L1Unstructured, amount=1),
        lambda: prune.global_unstructured([], prune.L1Unstructured, importance_scores=[], amount=1),
        lambda: prune.custom_from_mask(T.nn.Linear(2, 2), "weight", mask=T.ones(3)),
        lambda: prune.PruningContainer(prune.Identity()).add_pruning_method(3),
        lambda: prune.l1_unstructured(T.nn.Linear(2, 2), "missing", amount=1),
    ]


def test_misuse_raises_as_torch():
    assert_misuse_like_torch(_misuses(scriptc), _misuses(torch))


def test_failed_pruning_leaves_the_parameter_in_place():
    layer = scriptc.nn.Linear(2, 2)
    with pytest.raises(ValueError):
        scriptc.nn.utils.prune.l1_unstructured(layer, "weight", amount=5)
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight"]
    assert not scriptc.nn.utils.prune.is_pruned(layer)
