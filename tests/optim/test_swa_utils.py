"""torch.optim.swa_utils against torch 2.13: AveragedModel (SWA, EMA, avg_fn, multi_avg_fn,
use_buffers), SWALR's schedule and state_dict, update_bn, and their errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)


def _model(T, weights):
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4), T.nn.ReLU(), T.nn.Linear(4, 2))
    model.load_state_dict({k: T.tensor(v) for k, v in weights.items()})
    return model


def _weights():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _state(module) -> dict:
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


AVERAGES = {
    "swa": lambda T: dict(),
    "swa_buffers": lambda T: dict(use_buffers=True),
    "ema_multi": lambda T: dict(multi_avg_fn=T.optim.swa_utils.get_ema_multi_avg_fn(0.8)),
    "ema_multi_buffers": lambda T: dict(multi_avg_fn=T.optim.swa_utils.get_ema_multi_avg_fn(0.8), use_buffers=True),
    "ema_avg_fn": lambda T: dict(avg_fn=T.optim.swa_utils.get_ema_avg_fn(0.7)),
    "swa_avg_fn": lambda T: dict(avg_fn=T.optim.swa_utils.get_swa_avg_fn()),
    "swa_multi_fn": lambda T: dict(multi_avg_fn=T.optim.swa_utils.get_swa_multi_avg_fn()),
}


@pytest.mark.parametrize("average", sorted(AVERAGES))
def test_averaged_model_matches_torch(average):
    weights = _weights()
    batches = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(4)]
    states = {}
    for T in (scriptc, torch):
        model = _model(T, weights)
        averaged = T.optim.swa_utils.AveragedModel(model, **AVERAGES[average](T))
        optimizer = T.optim.SGD(model.parameters(), lr=0.1)
        for x in batches:
            optimizer.zero_grad()
            model(T.tensor(x)).square().mean().backward()
            optimizer.step()
            averaged.update_parameters(model)
        out = averaged(T.tensor(batches[0])).detach().numpy()
        states[T] = (_state(averaged), out, int(averaged.n_averaged))
    ours, theirs = states[scriptc], states[torch]
    assert ours[0].keys() == theirs[0].keys() and ours[2] == theirs[2] == 4
    for key in ours[0]:
        assert ours[0][key].dtype == theirs[0][key].dtype, key
        np.testing.assert_allclose(ours[0][key], theirs[0][key], rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)


def test_averaged_model_errors():
    model = scriptc.nn.Linear(2, 2)
    fn = scriptc.optim.swa_utils.get_swa_avg_fn()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        scriptc.optim.swa_utils.AveragedModel(model, avg_fn=fn, multi_avg_fn=fn)
    for T in (scriptc, torch):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\]"):
            T.optim.swa_utils.get_ema_multi_avg_fn(1.5)
        with pytest.raises(ValueError, match="Invalid decay value -0.1"):
            T.optim.swa_utils.get_ema_avg_fn(-0.1)


SCHEDULES = [dict(swa_lr=0.05), dict(swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear"),
             dict(swa_lr=[0.01, 0.2], anneal_epochs=0), dict(swa_lr=0.5, anneal_epochs=4)]


@pytest.mark.parametrize("options", SCHEDULES)
def test_swalr_schedule_matches_torch(options):
    rates = {}
    for T in (scriptc, torch):
        params = [T.nn.Parameter(T.ones(2)), T.nn.Parameter(T.ones(2))]
        optimizer = T.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=1.0)
        scheduler = T.optim.swa_utils.SWALR(optimizer, **options)
        seen = [scheduler.get_last_lr()]
        for _ in range(7):
            optimizer.step()
            scheduler.step()
            seen.append(scheduler.get_last_lr())
        state = scheduler.state_dict()
        assert "anneal_func" not in state and state["_anneal_strategy"] == options.get("anneal_strategy", "cos")
        resumed = T.optim.swa_utils.SWALR(optimizer, swa_lr=1.0, anneal_strategy="linear")
        resumed.load_state_dict(state)
        optimizer.step()
        resumed.step()
        seen.append(resumed.get_last_lr())
        rates[T] = seen
    np.testing.assert_allclose(np.array(rates[scriptc]), np.array(rates[torch]), rtol=1e-12)


def test_swalr_errors_match_torch():
    for T in (scriptc, torch):
        optimizer = T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=1.0)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got step"):
            T.optim.swa_utils.SWALR(optimizer, 0.1, anneal_strategy="step")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            T.optim.swa_utils.SWALR(optimizer, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
            T.optim.swa_utils.SWALR(optimizer, [0.1, 0.2])
        scheduler = T.optim.swa_utils.SWALR(optimizer, 0.1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scheduler.get_lr()
        assert "please use `get_last_lr()`" in str(caught[0].message)


def test_update_bn_matches_torch():
    weights = _weights()
    data = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    states = {}
    for T in (scriptc, torch):
        model = _model(T, weights).eval()
        loader = [(T.tensor(x), T.zeros(6)) for x in data[:2]] + [T.tensor(data[2])]
        T.optim.swa_utils.update_bn(loader, model)
        assert not model.training and model[1].momentum == 0.1
        states[T] = _state(model)
    for key in states[torch]:
        np.testing.assert_allclose(states[scriptc][key], states[torch][key], rtol=1e-5, atol=1e-6, err_msg=key)
    without_norm = scriptc.nn.Linear(2, 2)
    scriptc.optim.swa_utils.update_bn([scriptc.ones(1, 2)], without_norm)
