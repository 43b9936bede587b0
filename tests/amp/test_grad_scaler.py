"""torch.amp.GradScaler against torch 2.13: scaling, unscaling, skipped steps on inf/NaN, the scale's
growth and backoff, state_dict and pickling, misuse, and the disabled CUDA scaler on a CPU machine."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import scriptc
from tests.torch_errors import assert_misuse_like_torch

torch = pytest.importorskip("torch")


def _setup(T, weights, **scaler_options):
    model = T.nn.Linear(3, 2)
    with T.no_grad():
        model.weight.copy_(T.tensor(weights[0]))
        model.bias.copy_(T.tensor(weights[1]))
    optimizer = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer, T.amp.GradScaler("cpu", **scaler_options)


def _train(T, weights, batches, poison_steps, **scaler_options):
    """Per step: (step's return, scale, growth tracker, weight); a poisoned step's loss is inf or NaN."""
    model, optimizer, scaler = _setup(T, weights, **scaler_options)
    history = []
    for step, (x, y) in enumerate(batches):
        optimizer.zero_grad()
        with T.autocast("cpu"):
            loss = T.nn.functional.mse_loss(model(T.tensor(x)), T.tensor(y))
        if step in poison_steps:
            loss = loss * poison_steps[step]
        scaler.scale(loss).backward()
        if step % 3 == 1:
            scaler.unscale_(optimizer)
            T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        result = scaler.step(optimizer)
        scaler.update()
        history.append((result, scaler.get_scale(), scaler._get_growth_tracker(),
                        model.weight.detach().float().numpy().copy()))
    return history, scaler


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy on the poisoned steps
def test_training_loop_matches_torch():
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(2).astype(np.float32)]
    batches = [(rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32))
               for _ in range(9)]
    poison = {2: float("inf"), 5: float("nan")}
    options = dict(init_scale=2.0 ** 10, growth_interval=2, growth_factor=4.0, backoff_factor=0.25)
    ours, our_scaler = _train(scriptc, weights, batches, poison, **options)
    theirs, their_scaler = _train(torch, weights, batches, poison, **options)
    for (r1, s1, g1, w1), (r2, s2, g2, w2) in zip(ours, theirs):
        assert (r1, s1, g1) == (r2, s2, g2)
        np.testing.assert_allclose(w1, w2, rtol=2e-2, atol=2e-2)
    assert our_scaler.state_dict() == their_scaler.state_dict()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy, as the scale saturates
def test_scale_of_nested_outputs_and_growth_saturates_at_inf():
    scaler = scriptc.amp.GradScaler("cpu", init_scale=3.0e38, growth_interval=1)
    a, b = scriptc.ones(2), scriptc.ones(1)
    scaled = scaler.scale([a, (b, b)])
    assert isinstance(scaled, list) and isinstance(scaled[1], tuple)
    assert float(scaled[1][0]) == pytest.approx(3.0e38, rel=1e-6)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3)
    param = scriptc.nn.Parameter(scriptc.ones(2))
    optimizer = scriptc.optim.SGD([param], lr=0.1)
    param.grad = scriptc.ones(2)
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == pytest.approx(3.0e38, rel=1e-6)


def test_update_with_new_scale_and_state_dict_round_trip():
    for T in (scriptc, torch):
        scaler = T.amp.GradScaler("cpu")
        assert scaler.get_scale() == 2.0 ** 16 and scaler.state_dict()["_growth_tracker"] == 0
        scaler.scale(T.ones(1))
        param = T.nn.Parameter(T.ones(1))
        param.grad = T.ones(1)
        scaler.step(T.optim.SGD([param], lr=1.0))
        scaler.update(8.0)
        assert scaler.get_scale() == 8.0
        scaler.update(T.tensor(4.0))
        assert scaler.get_scale() == 4.0
        restored = T.amp.GradScaler("cpu")
        restored.load_state_dict(scaler.state_dict())
        assert restored.state_dict() == scaler.state_dict()
        copied = pickle.loads(pickle.dumps(scaler))
        assert copied.get_scale() == 4.0 and copied._scale is None


# each misuse: the gradients' dtype, and the calls made in order on a fresh scaler and SGD over one
# parameter holding such a gradient
MISUSES = [
    ("float32", [("scale",), ("unscale_",), ("unscale_",)]),
    ("float32", [("scale",), ("step",), ("unscale_",)]),
    ("float32", [("scale",), ("step",), ("step",)]),
    ("float16", [("scale",), ("unscale_",)]),
    ("float32", [("update",)]),
    ("float32", [("scale",), ("update",)]),
    ("float32", [("step", "closure")]),
    ("float32", [("scale",), ("step",), ("update", "two-element tensor")]),
    ("float32", [("load_state_dict",)]),
]


def _misuses(T):
    def run(calls, dtype):
        param = T.nn.Parameter(T.ones(2, dtype=dtype))
        param.grad = T.ones(2, dtype=dtype)
        scaler, optimizer = T.amp.GradScaler("cpu"), T.optim.SGD([param], lr=0.1)
        for call in calls:
            if call == ("scale",):
                scaler.scale(T.ones(1))
            elif call[0] in ("unscale_", "step"):
                getattr(scaler, call[0])(optimizer, **({"closure": lambda: None} if len(call) > 1 else {}))
            elif call[0] == "update":
                scaler.update(T.ones(2) if len(call) > 1 else None)
            else:
                scaler.load_state_dict({})

    builds = [lambda calls=calls, dtype=dtype: run(calls, getattr(T, dtype)) for dtype, calls in MISUSES]
    return builds + [lambda: T.amp.GradScaler("cpu", growth_factor=1.0)]


def test_misuse_raises_as_torch():
    assert_misuse_like_torch(_misuses(scriptc), _misuses(torch))


def test_cuda_scaler_without_a_gpu_is_disabled_with_torch_warnings():
    for T in (scriptc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            default = T.amp.GradScaler()
            legacy = T.cuda.amp.GradScaler()
            cpu_legacy = T.cpu.amp.GradScaler()
        messages = [(w.category, str(w.message)) for w in caught]
        assert messages == [
            (UserWarning, "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."),
            (FutureWarning, "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                            "`torch.amp.GradScaler('cuda', args...)` instead."),
            (UserWarning, "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."),
            (FutureWarning, "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                            "`torch.amp.GradScaler('cpu', args...)` instead."),
        ]
        assert not default.is_enabled() and not legacy.is_enabled() and cpu_legacy.is_enabled()
        loss = T.ones(1) * 3
        assert default.scale(loss) is loss and default.get_scale() == 1.0 and default.state_dict() == {}
        param = T.nn.Parameter(T.ones(1))
        param.grad = T.ones(1)
        default.step(T.optim.SGD([param], lr=1.0))
        default.update()
        assert float(param.detach()[0]) == 0.0
