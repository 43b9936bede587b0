"""Every optimizer and every option that changes its update rule, against torch 2.13 step by step."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.optim.torch_pairs import Pair, to_numpy

torch = pytest.importorskip("torch")

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.5, 0.9), amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.3, decoupled_weight_decay=True, maximize=True)),
    ("Adam", dict(lr=0.05, fused=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, amsgrad=True, weight_decay=0.2, foreach=False)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-5)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.1, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.1, betas=(0.5, 0.6), weight_decay=0.1)),
    ("RAdam", dict(lr=0.1, betas=(0.5, 0.6), weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.01, 0.2), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.05, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(centered=True, maximize=True)),
    ("RMSprop", dict(momentum=0.9)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=1.5, weight_decay=0.1, maximize=True)),
]


def _ids(case):
    name, options = case
    return name + "(" + ",".join(f"{k}={v}" for k, v in options.items()) + ")"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parameters_and_state_follow_torch(case, dtype):
    name, options = case
    pair = Pair(torch, np.random.default_rng(0), dtype)
    torch_opt = getattr(torch.optim, name)(pair.torch_params, **options)
    opt = getattr(scriptc.optim, name)(pair.params, **options)
    pair.steps(torch_opt, opt, 6)
    # float32 differs from torch only where torch's vectorised sqrt rounds differently (1 ulp)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    pair.assert_close(rtol=rtol, atol=rtol)
    expected, got = to_numpy(torch_opt.state_dict()), to_numpy(opt.state_dict())
    assert got["param_groups"] == expected["param_groups"]
    assert got["state"].keys() == expected["state"].keys()
    for index, torch_state in expected["state"].items():
        assert got["state"][index].keys() == torch_state.keys()
        for key, value in torch_state.items():
            assert np.asarray(got["state"][index][key]).dtype == np.asarray(value).dtype, key
            np.testing.assert_allclose(got["state"][index][key], value, rtol=rtol, atol=rtol, err_msg=key)


def test_sgd_and_adamax_match_torch_bit_for_bit_in_float32():
    """The fused multiply-adds round as torch's kernels do (no square root in these two rules)."""
    for name, options in [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                          ("Adamax", dict(lr=0.1, weight_decay=0.1))]:
        pair = Pair(torch, np.random.default_rng(1))
        torch_opt = getattr(torch.optim, name)(pair.torch_params, **options)
        opt = getattr(scriptc.optim, name)(pair.params, **options)
        pair.steps(torch_opt, opt, 5)
        pair.assert_close(rtol=0)


def test_parameters_without_gradient_are_left_alone_and_get_no_state():
    pair = Pair(torch, np.random.default_rng(2))
    opt = scriptc.optim.Adam(pair.params, lr=0.1)
    before = pair.params[1].detach().numpy().copy()
    pair.params[0].grad = scriptc.ones(pair.params[0].shape)
    opt.step()
    np.testing.assert_array_equal(pair.params[1].detach().numpy(), before)
    assert list(opt.state_dict()["state"]) == [0]
