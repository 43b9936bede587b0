"""Every lr_scheduler against torch 2.13: the learning rate (and cycled momentum) equal at every step."""

from __future__ import annotations

import math
import warnings

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _optimizer(module, optimizer="SGD", groups=2):
    params = [{"params": [module.nn.Parameter(module.ones(2))], "lr": 0.1 * (i + 1)} for i in range(groups)]
    if optimizer == "SGD":
        return module.optim.SGD(params, lr=0.1, momentum=0.9)
    return module.optim.Adam(params, lr=0.1)


SCHEDULES = [
    ("LambdaLR", lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e)),
    ("LambdaLR-per-group", lambda S, o: S.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.5 ** e])),
    ("MultiplicativeLR", lambda S, o: S.MultiplicativeLR(o, lambda e: 0.95)),
    ("StepLR", lambda S, o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ConstantLR", lambda S, o: S.ConstantLR(o, factor=0.25, total_iters=4)),
    ("LinearLR", lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6)),
    ("ExponentialLR", lambda S, o: S.ExponentialLR(o, gamma=0.87)),
    ("PolynomialLR", lambda S, o: S.PolynomialLR(o, total_iters=8, power=2.0)),
    ("CosineAnnealingLR", lambda S, o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    ("CyclicLR-triangular", lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=3)),
    ("CyclicLR-triangular2", lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=2, step_size_down=3,
                                                     mode="triangular2", base_momentum=0.7, max_momentum=0.95)),
    ("CyclicLR-exp_range", lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.9,
                                                   cycle_momentum=False)),
    ("CyclicLR-scale_fn", lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 1 / x,
                                                  scale_mode="cycle")),
    ("OneCycleLR-cos", lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20)),
    ("OneCycleLR-linear-3phase", lambda S, o: S.OneCycleLR(o, max_lr=0.8, epochs=4, steps_per_epoch=5,
                                                           anneal_strategy="linear", three_phase=True,
                                                           pct_start=0.25)),
    ("SequentialLR", lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=3),
                                                     S.ExponentialLR(o, 0.9), S.StepLR(o, 2)], milestones=[3, 7])),
    ("ChainedScheduler", lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 4), S.ExponentialLR(o, 0.9)])),
    ("CosineAnnealingLR-with-StepLR", lambda S, o: S.ChainedScheduler([S.CosineAnnealingLR(o, T_max=4),
                                                                       S.StepLR(o, 3, 0.5)])),
]


def _momenta(optimizer):
    return [g.get("momentum", g.get("betas", (None,))[0]) for g in optimizer.param_groups]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("name,make", SCHEDULES, ids=[n for n, _ in SCHEDULES])
def test_learning_rates_equal_torch_at_every_step(name, make, optimizer):
    torch_opt, opt = _optimizer(torch, optimizer), _optimizer(scriptc, optimizer)
    torch_sched = make(torch.optim.lr_scheduler, torch_opt)
    sched = make(scriptc.optim.lr_scheduler, opt)
    assert sched.get_last_lr() == torch_sched.get_last_lr()
    for _ in range(20):
        torch_opt.step()
        opt.step()
        torch_sched.step()
        sched.step()
        assert sched.get_last_lr() == torch_sched.get_last_lr()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in torch_opt.param_groups]
        assert _momenta(opt) == _momenta(torch_opt)


def test_cosine_warm_restarts_takes_fractional_epochs():
    torch_opt, opt = _optimizer(torch), _optimizer(scriptc)
    torch_sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(torch_opt, T_0=2, T_mult=3)
    sched = scriptc.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [0.25, 0.5, 1.75, 2.0, 3.5, 7.9, 8.0, 30.3]:
            torch_sched.step(epoch)
            sched.step(epoch)
            assert sched.get_last_lr() == torch_sched.get_last_lr()
            assert (sched.T_cur, sched.T_i, sched.last_epoch) == (torch_sched.T_cur, torch_sched.T_i,
                                                                  torch_sched.last_epoch)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR"])
def test_step_with_epoch_uses_the_closed_form(name):
    def make(module, optimizer):
        return dict(StepLR=lambda: module.StepLR(optimizer, 2), MultiStepLR=lambda: module.MultiStepLR(optimizer, [1, 4]),
                    ExponentialLR=lambda: module.ExponentialLR(optimizer, 0.5),
                    CosineAnnealingLR=lambda: module.CosineAnnealingLR(optimizer, 6),
                    LinearLR=lambda: module.LinearLR(optimizer, 0.5, total_iters=4))[name]()

    torch_opt, opt = _optimizer(torch), _optimizer(scriptc)
    torch_sched, sched = make(torch.optim.lr_scheduler, torch_opt), make(scriptc.optim.lr_scheduler, opt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in [3, 1, 7]:
            torch_sched.step(epoch)
            sched.step(epoch)
            assert sched.get_last_lr() == torch_sched.get_last_lr()
    assert any("The epoch parameter in `scheduler.step()` was not necessary" in str(w.message) for w in caught)


@pytest.mark.parametrize("options", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.5),
                                     dict(patience=1, cooldown=2, factor=0.5, min_lr=[0.02, 0.05]),
                                     dict(patience=0, factor=0.5, eps=0.03)], ids=str)
def test_reduce_on_plateau_equals_torch(options):
    torch_opt, opt = _optimizer(torch), _optimizer(scriptc)
    torch_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, **options)
    sched = scriptc.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.2, 0.3, 0.3, 0.3, 0.3] * 4 + [math.inf] * 15
    for metric in metrics:
        torch_sched.step(torch.tensor(metric))
        sched.step(scriptc.tensor(metric))
        assert sched.get_last_lr() == torch_sched.get_last_lr()
        assert (sched.best, sched.num_bad_epochs, sched.cooldown_counter) == (
            torch_sched.best, torch_sched.num_bad_epochs, torch_sched.cooldown_counter)


def _plain(state):
    return {k: v for k, v in state.items() if k not in ("_scale_fn_ref",)}


@pytest.mark.parametrize("name,make", [s for s in SCHEDULES if "Lambda" not in s[0] and "scale_fn" not in s[0]],
                         ids=[n for n, _ in SCHEDULES if "Lambda" not in n and "scale_fn" not in n])
def test_state_dict_from_torch_resumes_identically(name, make):
    torch_opt, opt = _optimizer(torch), _optimizer(scriptc)
    torch_sched = make(torch.optim.lr_scheduler, torch_opt)
    for _ in range(5):
        torch_opt.step()
        torch_sched.step()
    sched = make(scriptc.optim.lr_scheduler, opt)
    saved = torch_sched.state_dict()
    assert set(sched.state_dict()) == set(saved)
    sched.load_state_dict(saved)
    for group, torch_group in zip(opt.param_groups, torch_opt.param_groups):
        group.update({k: v for k, v in torch_group.items() if k != "params"})
    for _ in range(8):
        torch_opt.step()
        opt.step()
        torch_sched.step()
        sched.step()
        assert sched.get_last_lr() == torch_sched.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = _optimizer(scriptc, groups=1)
    decay = Decay()
    sched = scriptc.optim.lr_scheduler.LambdaLR(opt, decay)
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}]
    decay.rate = 0.1
    sched.load_state_dict(state)
    assert decay.rate == 0.5


def test_scheduler_step_before_optimizer_step_warns():
    opt = _optimizer(scriptc)
    sched = scriptc.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()
    opt = _optimizer(scriptc)
    sched = scriptc.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_get_lr_outside_step_warns_and_initial_lr_is_recorded():
    opt = _optimizer(scriptc)
    sched = scriptc.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.2]
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_scheduler_errors_match_torch():
    for module in (torch, scriptc):
        opt = _optimizer(module)
        schedulers = module.optim.lr_scheduler
        with pytest.raises(TypeError, match="list is not an Optimizer"):
            schedulers.StepLR([], 2)
        with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
            schedulers.StepLR(opt, 2, last_epoch=3)
        with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
            schedulers.LambdaLR(opt, [lambda e: 1.0])
        with pytest.raises(ValueError, match="Factor should be < 1.0."):
            schedulers.ReduceLROnPlateau(opt, factor=1.5)
        with pytest.raises(ValueError, match="mode sideways is unknown!"):
            schedulers.ReduceLROnPlateau(opt, mode="sideways")
        with pytest.raises(ValueError, match="You must define either total_steps OR"):
            schedulers.OneCycleLR(opt, 0.1)
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            schedulers.CyclicLR(module.optim.Adagrad(opt.param_groups[0]["params"]), 0.1, 1.0)
        with pytest.raises(ValueError, match="expects number of schedulers provided to be one more"):
            schedulers.SequentialLR(opt, [schedulers.StepLR(opt, 2)], milestones=[3])
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
            schedulers.ChainedScheduler([schedulers.ReduceLROnPlateau(opt)])
        sgd = module.optim.SGD(opt.param_groups[0]["params"], lr=0.1)
        one_cycle = schedulers.OneCycleLR(sgd, 0.1, total_steps=2)
        sgd.step()
        one_cycle.step()
        one_cycle.step()
        with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
            one_cycle.step()
