"""torch.func.functional_call / nn.utils.stateless.functional_call against torch 2.13: outputs and
gradients with substituted parameters, buffers, tied weights, strict keys, several dicts, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from tests.torch_errors import assert_misuse_like_torch

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)
INPUT = rng.standard_normal((6, 3)).astype(np.float32)


def _net(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(3, 3)
            self.norm = T.nn.BatchNorm1d(3)
            self.head = T.nn.Linear(3, 3)
            self.head.weight = self.fc.weight  # tied
            self.register_buffer("offset", T.zeros(3))

        def forward(self, x, scale=1.0):
            return self.head(self.norm(self.fc(x))) * scale + self.offset

    net = Net()
    with T.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(T.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)).astype(np.float32) * (i + 1)))
    return net


def _given():
    return {"fc.weight": rng.standard_normal((3, 3)), "fc.bias": rng.standard_normal(3),
              "head.bias": rng.standard_normal(3), "offset": rng.standard_normal(3),
              "norm.running_mean": np.zeros(3), "norm.running_var": np.ones(3)}


def _call(T, given, call, **options):
    net = _net(T)
    before = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    tensors = {k: T.tensor(v.astype(np.float32), requires_grad=k.endswith(("weight", "bias"))) for k, v in given.items()}
    x = T.tensor(INPUT)
    out = call(T)(net, tensors, (x,), {"scale": 2.0}, **options)
    (out * out).sum().backward()
    after = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    # the module keeps its own tensors (num_batches_tracked, not given, counts the call in place)
    assert before.keys() == after.keys()
    assert all(np.array_equal(before[k], after[k]) for k in before if k != "norm.num_batches_tracked")
    grads = {k: t.grad.numpy() for k, t in tensors.items() if t.grad is not None}
    return out.detach().numpy(), grads, {k: t.detach().numpy() for k, t in tensors.items()}


CALLS = {
    "func": lambda T: T.func.functional_call,
    "func_two_dicts": lambda T: lambda net, given, *rest, **kw: T.func.functional_call(
        net, ({k: v for k, v in given.items() if k.startswith("fc")},
              {k: v for k, v in given.items() if not k.startswith("fc")}), *rest, **kw),
}


@pytest.mark.parametrize("options", [dict(), dict(tie_weights=False), dict(strict=False)])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_outputs_gradients_and_buffers_match_torch(call, options):
    given = _given()
    ours = _call(scriptc, given, CALLS[call], **options)
    theirs = _call(torch, given, CALLS[call], **options)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)
    assert ours[1].keys() == theirs[1].keys()
    # fc.bias's gradient is zero up to rounding (the batch norm removes it): tolerances follow the largest
    scale = max(np.abs(g).max() for g in theirs[1].values())
    for key in theirs[1]:
        np.testing.assert_allclose(ours[1][key], theirs[1][key], rtol=1e-4, atol=1e-5 * scale, err_msg=key)
    for key in theirs[2]:  # the running statistics were updated in the given tensors
        np.testing.assert_allclose(ours[2][key], theirs[2][key], rtol=1e-5, atol=1e-6, err_msg=key)


def _misuses(T):
    x = T.ones(2, 3)
    net = _net(T)
    weight = {"fc.weight": T.ones(3, 3), "head.weight": T.zeros(3, 3)}
    return [
        lambda: T.func.functional_call(net, weight, x),
        lambda: T.func.functional_call(net, {"fc.bias": T.ones(3)}, x, strict=True),
        lambda: T.func.functional_call(net, {"fc.bias": T.ones(3), "nothing": T.ones(1)}, x, strict=True),
        lambda: T.func.functional_call(net, ({"fc.bias": T.ones(3)}, {"fc.bias": T.ones(3)}), x),
        lambda: T.func.functional_call(net, ({"fc.bias": T.ones(3)}, 3), x),
        lambda: T.func.functional_call(net, 3, x),
        lambda: T.func.functional_call(net, {"fc.bias": 3}, x),
        lambda: T.func.functional_call(net, {"missing.weight": T.ones(1)}, x),
        lambda: T.func.functional_call(T.jit.trace(T.nn.Linear(3, 1), x), {}, x),
    ]


def test_misuse_raises_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_misuse_like_torch(_misuses(scriptc), _misuses(torch))


def test_tied_weight_given_once_reaches_both_names_and_untied_does_not():
    net = _net(scriptc)
    x = scriptc.ones(2, 3)
    zeros = {"fc.weight": scriptc.zeros(3, 3)}
    net.eval()
    tied = scriptc.func.functional_call(net, zeros, x)
    untied = scriptc.func.functional_call(net, zeros, x, tie_weights=False)
    expected_tied = net.head.bias + net.offset
    np.testing.assert_allclose(tied.detach().numpy(), expected_tied.detach().expand(2, 3).numpy(), rtol=1e-6)
    assert not np.allclose(untied.detach().numpy(), tied.detach().numpy())


def test_deprecated_stateless_spelling_warns():
    model = scriptc.nn.Linear(2, 1)
    with pytest.warns(FutureWarning, match="Please use `torch.func.functional_call` instead"):
        out = scriptc.nn.utils.stateless.functional_call(model, {"bias": scriptc.ones(1) * 5, "weight":
                                                                 scriptc.zeros(1, 2)}, scriptc.ones(3, 2))
    assert out.detach().numpy().tolist() == [[5.0]] * 3
