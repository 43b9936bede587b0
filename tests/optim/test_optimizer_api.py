"""The Optimizer API: state dicts both ways with torch, parameter groups, closures, zero_grad, hooks, errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.optim.torch_pairs import Pair, to_numpy
from tests.torch_values import as_backend

torch = pytest.importorskip("torch")

RESUMABLE = [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)),
             ("AdamW", dict(lr=0.05)), ("RMSprop", dict(momentum=0.5, centered=True)), ("Adagrad", dict(lr=0.1)),
             ("Adadelta", dict()), ("Adamax", dict()), ("NAdam", dict()), ("RAdam", dict()), ("ASGD", dict(t0=1)),
             ("Rprop", dict())]


def _scalar(value):
    return scriptc.from_numpy(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("name,options", RESUMABLE, ids=[n for n, _ in RESUMABLE])
def test_torch_state_dict_loads_and_continues_identically(name, options):
    rng = np.random.default_rng(3)
    pair = Pair(torch, rng)
    torch_opt = getattr(torch.optim, name)(pair.torch_params, **options)
    for _ in range(3):
        pair.set_grads()
        torch_opt.step()
    for pt, ps in zip(pair.torch_params, pair.params):
        ps.data = scriptc.from_numpy(pt.detach().numpy().copy())
    opt = getattr(scriptc.optim, name)(pair.params, **options)
    saved = to_numpy(torch_opt.state_dict())
    opt.load_state_dict({"state": {i: {k: _scalar(v) for k, v in s.items()} for i, s in saved["state"].items()},
                         "param_groups": saved["param_groups"]})
    assert isinstance(opt.state[pair.params[0]]["step" if name != "SGD" else "momentum_buffer"], scriptc.Tensor)
    pair.steps(torch_opt, opt, 3)
    pair.assert_close(rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name,options", RESUMABLE, ids=[n for n, _ in RESUMABLE])
def test_scriptc_state_dict_loads_into_torch(name, options):
    pair = Pair(torch, np.random.default_rng(4))
    opt = getattr(scriptc.optim, name)(pair.params, **options)
    for _ in range(3):
        pair.set_grads()
        opt.step()
    for pt, ps in zip(pair.torch_params, pair.params):
        pt.data = torch.from_numpy(ps.detach().numpy().copy())
    torch_opt = getattr(torch.optim, name)(pair.torch_params, **options)
    torch_opt.load_state_dict(as_backend(torch, to_numpy(opt.state_dict())))
    pair.steps(torch_opt, opt, 3)
    pair.assert_close(rtol=2e-5, atol=2e-6)


def test_own_state_dict_round_trip_numpy_arrays_accepted():
    pair = Pair(torch, np.random.default_rng(5))
    opt = scriptc.optim.Adam(pair.params, lr=0.1)
    pair.set_grads()
    opt.step()
    saved = to_numpy(opt.state_dict())
    fresh = scriptc.optim.Adam(pair.params, lr=0.5)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 0.1
    assert fresh.param_groups[0]["params"] == pair.params
    state = fresh.state[pair.params[0]]
    assert isinstance(state["exp_avg"], scriptc.Tensor) and state["step"].item() == 1.0
    np.testing.assert_array_equal(state["exp_avg"].numpy(), saved["state"][0]["exp_avg"])


def test_loaded_state_takes_the_parameter_dtype_but_step_keeps_its_own():
    param = scriptc.nn.Parameter(scriptc.zeros(3, dtype=scriptc.float64))
    opt = scriptc.optim.Adam([param])
    opt.load_state_dict({"state": {0: {"step": np.array(2.0, np.float32), "exp_avg": np.ones(3, np.float32),
                                       "exp_avg_sq": np.ones(3, np.float32)}},
                         "param_groups": opt.state_dict()["param_groups"]})
    assert opt.state[param]["exp_avg"].dtype is scriptc.float64
    assert opt.state[param]["step"].dtype is scriptc.float32


def test_load_state_dict_errors():
    a, b = scriptc.nn.Parameter(scriptc.zeros(2)), scriptc.nn.Parameter(scriptc.zeros(2))
    opt = scriptc.optim.SGD([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]})


def test_param_groups_have_their_own_options_and_follow_torch():
    pair = Pair(torch, np.random.default_rng(6))

    def groups(params):
        return [{"params": [params[0]], "lr": 0.01, "momentum": 0.5}, {"params": params[1], "nesterov": True}]

    torch_opt = torch.optim.SGD(groups(pair.torch_params), lr=0.1, momentum=0.9)
    opt = scriptc.optim.SGD(groups(pair.params), lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.1]
    pair.steps(torch_opt, opt, 4)
    pair.assert_close(rtol=0)
    assert to_numpy(opt.state_dict())["param_groups"] == to_numpy(torch_opt.state_dict())["param_groups"]


def test_add_param_group_takes_the_defaults_and_the_new_parameters_step():
    a, b = scriptc.nn.Parameter(scriptc.ones(2)), scriptc.nn.Parameter(scriptc.ones(2))
    opt = scriptc.optim.SGD([a], lr=0.5)
    opt.add_param_group({"params": b, "lr": 0.25})
    assert opt.param_groups[1]["momentum"] == 0 and opt.param_groups[1]["params"] == [b]
    a.grad, b.grad = scriptc.ones(2), scriptc.ones(2)
    opt.step()
    assert a.tolist() == [0.5, 0.5] and b.tolist() == [0.75, 0.75]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])


def test_named_parameters_give_param_names():
    model = scriptc.nn.Linear(2, 1)
    opt = scriptc.optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_step_with_closure_returns_the_loss_and_evaluates_with_grad():
    model = scriptc.nn.Linear(3, 1)
    opt = scriptc.optim.SGD(model.parameters(), lr=0.1)
    x = scriptc.ones(2, 3)

    def closure():
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        return loss

    with scriptc.no_grad():
        loss = opt.step(closure)
    assert isinstance(loss, scriptc.Tensor) and model.weight.grad is not None


def test_zero_grad_to_none_or_to_zeros():
    p = scriptc.nn.Parameter(scriptc.ones(2))
    opt = scriptc.optim.Adam([p])
    p.grad = scriptc.ones(2)
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_changes_the_parameter_version():
    p = scriptc.nn.Parameter(scriptc.ones(2))
    opt = scriptc.optim.SGD([p], lr=1.0)
    p.grad = scriptc.ones(2)
    before = p._version
    opt.step()
    assert p._version > before


def test_step_hooks_run_in_order_and_can_be_removed():
    p = scriptc.nn.Parameter(scriptc.ones(2))
    opt = scriptc.optim.SGD([p], lr=1.0)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    global_handle = scriptc.optim.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global", True)))
    p.grad = scriptc.ones(2)
    opt.step()
    assert calls == [("global", True), ("pre", True), ("post", True)]
    pre.remove()
    global_handle.remove()
    calls.clear()
    opt.step()
    assert calls == [("post", True)]


def test_pre_hook_may_replace_the_arguments():
    p = scriptc.nn.Parameter(scriptc.ones(1))
    opt = scriptc.optim.SGD([p], lr=1.0)
    p.grad = scriptc.ones(1)
    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": lambda: 7.0}))
    assert opt.step() == 7.0
    opt.register_step_pre_hook(lambda o, args, kwargs: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step()


def test_a_subclass_with_its_own_step_uses_state_keyed_by_parameter():
    class SignSGD(scriptc.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        @scriptc.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    self.state[p]["count"] = self.state[p].get("count", 0) + 1
                    p.sub_(p.grad.sign() * group["lr"])

    p = scriptc.nn.Parameter(scriptc.tensor([1.0, -1.0]))
    opt = SignSGD([p])
    p.grad = scriptc.tensor([2.0, -3.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -0.9], rtol=1e-6)
    assert opt.state_dict()["state"] == {0: {"count": 1}}


def test_repr_lists_each_group_like_torch():
    p = torch.nn.Parameter(torch.ones(1))
    assert repr(scriptc.optim.SGD([scriptc.nn.Parameter(scriptc.ones(1))], lr=0.1)) == repr(torch.optim.SGD([p], lr=0.1))


INVALID = [
    ("SGD", dict(lr=-1), ValueError, "Invalid learning rate: -1"),
    ("SGD", dict(momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    ("SGD", dict(nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("Adam", dict(fused=True, foreach=True), RuntimeError, "`fused` and `foreach` cannot be `True` together."),
    ("Adadelta", dict(rho=1.5), ValueError, "Invalid rho value: 1.5"),
    ("Rprop", dict(etas=(1.5, 1.2)), ValueError, "Invalid eta values: 1.5, 1.2"),
    ("Adagrad", dict(lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
    ("NAdam", dict(momentum_decay=-1), ValueError, "Invalid momentum_decay value: -1"),
]


@pytest.mark.parametrize("name,options,error,message", INVALID, ids=[f"{n}-{m}" for n, _, _, m in INVALID])
def test_invalid_options_raise_as_torch(name, options, error, message):
    for module, make in ((torch, torch.ones), (scriptc, scriptc.ones)):
        with pytest.raises(error) as raised:
            getattr(module.optim, name)([module.nn.Parameter(make(1))], **options)
        assert str(raised.value) == message


def test_lbfgs_refuses_parameter_groups():
    groups = [{"params": [scriptc.nn.Parameter(scriptc.ones(1))]}, {"params": [scriptc.nn.Parameter(scriptc.ones(1))]}]
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        scriptc.optim.LBFGS(groups)


def test_bad_params_raise_as_torch():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        scriptc.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got torch.FloatTensor"):
        scriptc.optim.SGD(scriptc.ones(2), lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        scriptc.optim.SGD([1], lr=0.1)
    leaf = scriptc.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        scriptc.optim.SGD([leaf * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordering of tensors in sets will change"):
        scriptc.optim.SGD([{"params": {leaf}}], lr=0.1)


def test_capturable_and_differentiable_are_refused_at_step():
    p = scriptc.nn.Parameter(scriptc.ones(1))
    p.grad = scriptc.ones(1)
    with pytest.raises(AssertionError, match="If capturable=True, params and state_steps must be on supported"):
        scriptc.optim.Adam([p], capturable=True).step()
    with pytest.raises(RuntimeError, match="differentiable=True"):
        scriptc.optim.Adam([p], differentiable=True).step()


def test_state_dict_through_checkpoint_files_both_ways(tmp_path):
    pair = Pair(torch, np.random.default_rng(7))
    opt = scriptc.optim.Adam(pair.params, lr=0.1, amsgrad=True)
    torch_opt = torch.optim.Adam(pair.torch_params, lr=0.1, amsgrad=True)
    pair.steps(torch_opt, opt, 2)
    scriptc.save(opt.state_dict(), tmp_path / "ours.pt")
    torch.save(torch_opt.state_dict(), tmp_path / "theirs.pt")
    torch_opt.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=True))
    opt.load_state_dict(scriptc.load(tmp_path / "theirs.pt"))
    assert isinstance(opt.state[pair.params[0]]["exp_avg"], scriptc.Tensor)
    pair.steps(torch_opt, opt, 2)
    pair.assert_close(rtol=2e-5, atol=2e-6)
