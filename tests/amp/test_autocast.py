"""torch.autocast against torch 2.13: which ops change dtype on the CPU, their values, gradients
through the casts, nesting, the decorator form, the cast cache, and misuse."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import scriptc
from scriptc.amp.policy import FLOAT32, LOWER_PRECISION, WIDEST
from scriptc.ops import OPS

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _arrays(*shapes):
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


# name -> (input shapes, f(T, *tensors)); each runs under autocast in both libraries
CASES = {
    "linear": ([(4, 3), (5, 3), (5,)], lambda T, x, w, b: T.nn.functional.linear(x, w, b)),
    "matmul": ([(3, 4), (4, 2)], lambda T, a, b: a @ b),
    "mm": ([(3, 4), (4, 2)], lambda T, a, b: T.mm(a, b)),
    "bmm": ([(2, 3, 4), (2, 4, 2)], lambda T, a, b: T.bmm(a, b)),
    "addmm": ([(3, 2), (3, 4), (4, 2)], lambda T, c, a, b: T.addmm(c, a, b)),
    "baddbmm": ([(2, 3, 2), (2, 3, 4), (2, 4, 2)], lambda T, c, a, b: T.baddbmm(c, a, b)),
    "addbmm": ([(3, 2), (2, 3, 4), (2, 4, 2)], lambda T, c, a, b: T.addbmm(c, a, b)),
    "conv1d": ([(1, 2, 7), (3, 2, 3)], lambda T, x, w: T.nn.functional.conv1d(x, w)),
    "conv2d": ([(2, 2, 6, 6), (3, 2, 3, 3), (3,)], lambda T, x, w, b: T.nn.functional.conv2d(x, w, b, padding=1)),
    "conv_transpose2d": ([(1, 2, 4, 4), (2, 3, 3, 3)], lambda T, x, w: T.nn.functional.conv_transpose2d(x, w)),
    "prelu": ([(2, 3), (3,)], lambda T, x, w: T.nn.functional.prelu(x, w)),
    "einsum": ([(3, 4), (4, 2)], lambda T, a, b: T.einsum("ij,jk->ik", a, b)),
    "relu": ([(3, 4)], lambda T, x: T.relu(x)),
    "softmax": ([(3, 4)], lambda T, x: T.softmax(x, 1)),
    "layer_norm": ([(3, 4)], lambda T, x: T.nn.functional.layer_norm(x, (4,))),
    "sum": ([(3, 4)], lambda T, x: x.sum()),
    "mse_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.mse_loss(a, b)),
    "cross_entropy": ([(3, 4)], lambda T, x: T.nn.functional.cross_entropy(x, T.tensor([0, 3, 1]))),
    "prod": ([(5,)], lambda T, x: x.prod()),
    "cdist": ([(3, 4), (2, 4)], lambda T, a, b: T.cdist(a, b)),
    "avg_pool3d": ([(1, 1, 4, 4, 4)], lambda T, x: T.nn.functional.avg_pool3d(x, 2)),
    "max_pool2d": ([(1, 1, 4, 4)], lambda T, x: T.nn.functional.max_pool2d(x, 2)),
    "reflect_pad1d": ([(1, 2, 5)], lambda T, x: T.nn.functional.pad(x, (1, 2), mode="reflect")),
    "reflect_pad3d": ([(1, 1, 3, 3, 3)], lambda T, x: T.nn.functional.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect")),
    "replicate_pad": ([(1, 2, 5)], lambda T, x: T.nn.functional.pad(x, (1, 2), mode="replicate")),
    "constant_pad": ([(1, 2, 5)], lambda T, x: T.nn.functional.pad(x, (1, 2))),
    "cat": ([(2, 3), (2, 3)], lambda T, a, b: T.cat([a, b.to(T.float16)])),
    "stack": ([(2, 3), (2, 3)], lambda T, a, b: T.stack([a, b.to(T.bfloat16)])),
    "stack_float32": ([(2, 3), (2, 3)], lambda T, a, b: T.stack([a.float(), b.to(T.bfloat16)])),
    # losses torch's CPU autocast runs in float32 although scriptc composes them from pointwise ops
    "l1_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.l1_loss(a, b)),
    "l1_loss_weighted": ([(3, 4), (3, 4), (3, 4)], lambda T, a, b, w: T.nn.functional.l1_loss(a, b, weight=w)),
    "smooth_l1_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.smooth_l1_loss(a, b)),
    "huber_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.huber_loss(a, b)),
    "huber_loss_weighted": ([(3, 4), (3, 4), (3, 4)], lambda T, a, b, w: T.nn.functional.huber_loss(a, b, weight=w)),
    "bce_with_logits": ([(3, 4), (3, 4)],
                        lambda T, a, b: T.nn.functional.binary_cross_entropy_with_logits(a, b.sigmoid())),
    "kl_div": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.kl_div(a, b.softmax(1), reduction="batchmean")),
    "poisson_nll_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.poisson_nll_loss(a, b.abs())),
    "hinge_embedding_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.hinge_embedding_loss(a, b.sign())),
    "soft_margin_loss": ([(3, 4), (3, 4)], lambda T, a, b: T.nn.functional.soft_margin_loss(a, b.sign())),
    "margin_ranking_loss": ([(4,), (4,), (4,)],
                            lambda T, a, b, t: T.nn.functional.margin_ranking_loss(a, b, t.sign())),
    "cosine_embedding_loss": ([(3, 4), (3, 4)],
                              lambda T, a, b: T.nn.functional.cosine_embedding_loss(a, b, T.tensor([1, -1, 1]))),
    "triplet_margin_loss": ([(3, 4), (3, 4), (3, 4)], lambda T, a, p, n: T.nn.functional.triplet_margin_loss(a, p, n)),
    "multi_margin_loss": ([(3, 4)], lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 3, 1]))),
    "multilabel_margin_loss": ([(3, 4)], lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor([[0, 2, -1, 0], [1, -1, 0, 0], [3, 2, 1, 0]]))),
    # linear algebra on torch's float32 list that scriptc composes from other ops
    "cholesky_solve": ([(3, 2), (3, 3)],
                       lambda T, b, a: T.cholesky_solve(b, a.tril() * 0.1 + T.eye(3, dtype=a.dtype) * 2)),
    "cholesky_inverse": ([(3, 3)], lambda T, a: T.cholesky_inverse(a.tril() * 0.1 + T.eye(3, dtype=a.dtype) * 2)),
    "triangular_solve": ([(3, 2), (3, 3)],
                         lambda T, b, a: T.triangular_solve(b, a.triu() * 0.1 + T.eye(3, dtype=a.dtype) * 2)[0]),
    "lu_solve": ([(3, 2), (3, 3)], lambda T, b, a: T.lu_solve(b, a * 0.1 + T.eye(3, dtype=a.dtype) * 2,
                                                              T.tensor([1, 3, 3], dtype=T.int32))),
    "householder_product": ([(4, 3), (3,)], lambda T, a, tau: T.linalg.householder_product(a, tau)),
    "orgqr": ([(4, 3), (3,)], lambda T, a, tau: T.orgqr(a, tau)),
}


def _run(T, fn, arrays, dtype, input_dtype):
    """The result, or the error raised."""
    tensors = [T.tensor(a).to(input_dtype) for a in arrays]
    try:
        with T.autocast("cpu", dtype=dtype):
            return fn(T, *tensors)
    except RuntimeError as error:
        return error


def _dtype_name(d) -> str:
    return str(d).rpartition(".")[2]


def _close(ours, theirs, dtype) -> None:
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype)
    tol = 2 ** -6 if _dtype_name(dtype) == "bfloat16" else 2 ** -8
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("input_name", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_dtype_and_value_match_torch(case, input_name, dtype_name):
    shapes, fn = CASES[case]
    arrays = _arrays(*shapes)
    ours = _run(scriptc, fn, arrays, getattr(scriptc, dtype_name), getattr(scriptc, input_name))
    theirs = _run(torch, fn, arrays, getattr(torch, dtype_name), getattr(torch, input_name))
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours) == str(theirs)
    else:
        _close(ours, theirs, getattr(scriptc, dtype_name))


def test_policy_names_are_ops():
    for name in LOWER_PRECISION | FLOAT32 | WIDEST:
        assert name in OPS, name


def test_float64_inputs_are_not_cast():
    a = scriptc.randn(3, 4, dtype=scriptc.float64)
    with scriptc.autocast("cpu"):
        assert (a @ a.t()).dtype is scriptc.float64


def _mlp(T, weights):
    layers = T.nn.Sequential(T.nn.Linear(6, 8), T.nn.ReLU(), T.nn.Linear(8, 3))
    with T.no_grad():
        for p, w in zip(layers.parameters(), weights):
            p.copy_(T.tensor(w))
    return layers


def test_training_step_gradients_match_torch():
    weights = _arrays((8, 6), (8,), (3, 8), (3,))
    x, y = _arrays((5, 6), (5, 3))
    grads = {}
    for T in (scriptc, torch):
        model = _mlp(T, weights)
        with T.autocast("cpu", dtype=T.bfloat16):
            out = model(T.tensor(x))
            loss = T.nn.functional.mse_loss(out, T.tensor(y))
        assert _dtype_name(out.dtype) == "bfloat16" and _dtype_name(loss.dtype) == "float32"
        loss.backward()
        grads[T] = [p.grad for p in model.parameters()]
    for ours, theirs in zip(grads[scriptc], grads[torch]):
        assert _dtype_name(ours.dtype) == "float32" == _dtype_name(theirs.dtype)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-2, atol=3e-2)


def test_nested_disabled_region_and_state_restored():
    a = scriptc.randn(3, 3)
    assert not scriptc.is_autocast_enabled("cpu")
    with scriptc.autocast("cpu"):
        assert scriptc.is_autocast_enabled("cpu") and not scriptc.is_autocast_enabled()
        with scriptc.autocast("cpu", enabled=False):
            assert (a @ a).dtype is scriptc.float32
            with scriptc.autocast("cpu", dtype=scriptc.float16):
                assert (a @ a).dtype is scriptc.float16
                assert scriptc.get_autocast_dtype("cpu") is scriptc.float16
            assert scriptc.get_autocast_dtype("cpu") is scriptc.bfloat16
        assert (a @ a).dtype is scriptc.bfloat16
    assert not scriptc.is_autocast_enabled("cpu")
    with pytest.raises(KeyError), scriptc.autocast("cpu"):
        raise KeyError("leaves the region")
    assert not scriptc.is_autocast_enabled("cpu") and (a @ a).dtype is scriptc.float32


def test_decorator_form():
    @scriptc.autocast("cpu")
    def product(a, b):
        """Docstring kept."""
        return a @ b

    a = scriptc.randn(2, 2)
    assert product(a, a).dtype is scriptc.bfloat16
    assert product.__doc__ == "Docstring kept." and (a @ a).dtype is scriptc.float32


def test_state_is_thread_local():
    seen = []
    with scriptc.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.append(scriptc.is_autocast_enabled("cpu")))
        worker.start()
        worker.join()
    assert seen == [False]


def test_weight_casts_are_cached_within_the_region():
    weight = scriptc.randn(4, 4, requires_grad=True)
    x = scriptc.randn(2, 4)
    with scriptc.autocast("cpu"):
        first = scriptc.nn.functional.linear(x, weight)
        second = scriptc.nn.functional.linear(x, weight)
        assert len(scriptc.amp.state.STATE.cache) == 1
        (first.float().sum() + second.float().sum()).backward()
    assert not scriptc.amp.state.STATE.cache
    expected = 2 * x.to(scriptc.bfloat16).float().sum(0).expand(4, 4)
    np.testing.assert_allclose(weight.grad.numpy(), expected.numpy(), rtol=1e-2)
    with scriptc.autocast("cpu", cache_enabled=False):
        scriptc.nn.functional.linear(x, weight)
        assert not scriptc.amp.state.STATE.cache


def test_traced_model_records_the_casts():
    model = scriptc.nn.Linear(3, 2)
    with scriptc.autocast("cpu"):
        traced = scriptc.jit.trace(model, scriptc.randn(4, 3))
    x = scriptc.randn(5, 3)
    out = traced(x)
    assert out.dtype is scriptc.bfloat16
    with scriptc.autocast("cpu"):
        np.testing.assert_array_equal(out.float().detach().numpy(), model(x).float().detach().numpy())


def _warning_messages(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message)) for w in caught]


def test_warnings_match_torch():
    for build in (lambda T: T.autocast("cuda"), lambda T: T.autocast("cpu", dtype=T.float32),
                  lambda T: T.autocast("cpu", dtype=T.int32), lambda T: T.cuda.amp.autocast(),
                  lambda T: T.cpu.amp.autocast()):
        ours, our_warnings = _warning_messages(lambda: build(scriptc))
        theirs, their_warnings = _warning_messages(lambda: build(torch))
        assert ours._enabled == theirs._enabled
        assert [(c, m.replace("scriptc.", "torch.")) for c, m in our_warnings] == their_warnings


def test_misuse_raises_as_torch():
    for build in (lambda T: T.autocast(1), lambda T: T.autocast("tpu"),
                  lambda T: T.autocast("cpu")(3), lambda T: T.is_autocast_enabled(3),
                  lambda T: T.set_autocast_enabled("cpu")):
        with pytest.raises(Exception) as theirs:
            build(torch)
        with pytest.raises(type(theirs.value)) as ours:
            build(scriptc)
        assert str(ours.value) == str(theirs.value)


def test_deprecated_aliases_keep_their_device_defaults():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scriptc.cuda.amp import autocast as cuda_autocast
        assert cuda_autocast().fast_dtype is scriptc.float16 and cuda_autocast().device == "cuda"
        with scriptc.cpu.amp.autocast(dtype=scriptc.float16):
            assert (scriptc.randn(2, 2) @ scriptc.randn(2, 2)).dtype is scriptc.float16
    assert scriptc.cpu.is_available() and scriptc.cpu.device_count() == 1


def test_custom_fwd_casts_inputs_and_custom_bwd_replays_the_state():
    class Context:
        pass

    @scriptc.amp.custom_fwd(device_type="cpu", cast_inputs=scriptc.float32)
    def forward(ctx, x):
        return x.dtype, scriptc.is_autocast_enabled("cpu")

    @scriptc.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        return scriptc.is_autocast_enabled("cpu"), scriptc.get_autocast_dtype("cpu")

    ctx = Context()
    with scriptc.autocast("cpu", dtype=scriptc.float16):
        assert forward(ctx, scriptc.randn(2).half()) == (scriptc.float32, False)
    assert backward(ctx, None) == (False, scriptc.float16)

    @scriptc.amp.custom_fwd(device_type="cpu")
    def forward_in_region(ctx, x):
        return x.dtype

    with scriptc.autocast("cpu"):
        assert forward_in_region(ctx, scriptc.randn(2)) is scriptc.float32
    assert backward(ctx, None) == (True, scriptc.bfloat16)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        scriptc.amp.custom_fwd(device_type=None)


def test_deprecated_state_getters_warn_as_torch():
    for name in ("is_autocast_cpu_enabled", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype"):
        ours, our_warnings = _warning_messages(getattr(scriptc, name))
        theirs, their_warnings = _warning_messages(getattr(torch, name))
        assert str(ours).replace("scriptc.", "torch.") == str(theirs)
        # torch's C++ warnings end with where they were raised: "(Triggered internally at ...)"
        assert our_warnings == [(c, m.split(" (Triggered internally")[0]) for c, m in their_warnings]
