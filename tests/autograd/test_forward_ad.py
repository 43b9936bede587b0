"""torch.autograd.forward_ad against torch 2.13: tangents through common ops (J t from each op's own
gradient formula), in-place ops, no_grad, reverse mode alongside, levels and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

rng = np.random.default_rng(11)
X, TANGENT, W = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
LAYER_WEIGHT, LAYER_BIAS = rng.standard_normal((3, 4)), rng.standard_normal(3)

PROGRAMS = {
    "arithmetic": lambda T, a: a * a * 2 + 1 - a / (a * a + 1),
    "unary chain": lambda T, a: a.sin().exp() + T.tanh(a) + a.sigmoid() + (a.abs() + 1).sqrt() + a ** 3,
    "matmul": lambda T, a: a @ T.tensor(W),
    "linear": lambda T, a: T.nn.functional.linear(a, T.tensor(W.T), T.ones(2, dtype=T.float64)),
    "reductions": lambda T, a: a.sum(1) + a.mean(1) + a.norm(dim=1),
    "softmax": lambda T, a: a.softmax(1) + T.log_softmax(a, 0),
    "relu": lambda T, a: T.relu(a) + T.nn.functional.gelu(a),
    "layer_norm": lambda T, a: T.nn.functional.layer_norm(a, (4,)),
    "views": lambda T, a: T.cat([a[1:, ::2], a.t()[:2, :2]]).reshape(-1),
    "where": lambda T, a: T.where(a > 0, a, a * a),
    "loss": lambda T, a: T.nn.functional.mse_loss(a, T.zeros(3, 4)),
    "module": lambda T, a: T.nn.Sequential(_linear(T), T.nn.Tanh())(a),
}


def _linear(T):
    layer = T.nn.Linear(4, 3).double()
    with T.no_grad():
        layer.weight.copy_(T.tensor(LAYER_WEIGHT))
        layer.bias.copy_(T.tensor(LAYER_BIAS))
    return layer


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tangents_match_torch(name):
    tangents = []
    for T in (torch, scriptc):
        with T.autograd.forward_ad.dual_level():
            dual = T.autograd.forward_ad.make_dual(T.tensor(X), T.tensor(TANGENT))
            out = PROGRAMS[name](T, dual)
            primal, tangent = T.autograd.forward_ad.unpack_dual(out)
        tangents.append((primal.detach().numpy(), tangent.detach().numpy()))
    (expected_primal, expected), (actual_primal, actual) = tangents
    np.testing.assert_allclose(actual_primal, expected_primal, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12)


def test_inplace_no_grad_reverse_mode_and_non_differentiable_outputs():
    fw = scriptc.autograd.forward_ad
    x = scriptc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with fw.dual_level() as level:
        assert level == 0
        dual = fw.make_dual(x, scriptc.tensor([1.0, 0.0, 2.0]))
        squared = dual * dual
        scaled = squared.clone()
        scaled.mul_(3)
        with scriptc.no_grad():
            exponent = dual.exp()
        np.testing.assert_allclose(fw.unpack_dual(scaled).tangent.numpy(), [6.0, 0.0, 36.0])
        np.testing.assert_allclose(fw.unpack_dual(exponent).tangent.numpy(), np.exp([1.0, 2.0, 3.0]) * [1, 0, 2],
                                   rtol=1e-6)
        assert fw.unpack_dual(dual.argmax()).tangent is None
        assert fw.unpack_dual(x).tangent is None
        squared.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
        unpacked = fw.unpack_dual(dual)
        assert type(unpacked).__name__ == "UnpackedDualTensor" and unpacked.primal.requires_grad
    assert fw.unpack_dual(dual).tangent is None  # the level closed


def test_dual_level_as_decorator():
    fw = scriptc.autograd.forward_ad

    @fw.dual_level()
    def derivative_of_sin(a):
        return fw.unpack_dual(fw.make_dual(a, scriptc.ones(3)).sin()).tangent

    np.testing.assert_allclose(derivative_of_sin(scriptc.tensor([0.0, 1.0, 2.0])).numpy(), np.cos([0.0, 1.0, 2.0]),
                               rtol=1e-6)


@pytest.mark.parametrize("code", [
    "fw.make_dual(x, T.ones(2))",
    "fw.make_dual(T.ones(3, dtype=T.int64), T.ones(3))",
    "fw.make_dual(fw.make_dual(x, T.ones(3)), T.ones(3))",
    "fw.make_dual(x, T.ones(3), level=1)",
    "fw.enter_dual_level()",
    "fw.unpack_dual(fw.make_dual(x, T.ones(3)), level=2)",
])
def test_errors_inside_a_level_match_torch(code):
    def run(T):
        with T.autograd.forward_ad.dual_level():
            return raised(lambda: eval(code, {"T": T, "fw": T.autograd.forward_ad, "x": T.ones(3)}))
    expected = run(torch)
    assert expected is not None and run(scriptc) == expected


def test_no_level_and_unsupported_ops():
    fw = scriptc.autograd.forward_ad
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fw.make_dual(scriptc.ones(3), scriptc.ones(3))
    with fw.dual_level():
        dual = fw.make_dual(scriptc.ones(3), scriptc.ones(3))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with cdist that does not support it"):
            scriptc.cdist(dual[None], scriptc.ones(1, 3))


def test_a_random_op_gets_the_tangent_of_its_own_draws():
    fw = scriptc.autograd.forward_ad
    scriptc.manual_seed(3)
    with fw.dual_level():
        dual = fw.make_dual(scriptc.ones(64), scriptc.full((64,), 3.0))
        primal, tangent = fw.unpack_dual(scriptc.nn.functional.dropout(dual, 0.5))
        after = scriptc.rand(2)
    np.testing.assert_array_equal(tangent.numpy(), 3 * primal.numpy())
    scriptc.manual_seed(3)
    np.testing.assert_array_equal(scriptc.nn.functional.dropout(scriptc.ones(64), 0.5).numpy(), primal.numpy())
    np.testing.assert_array_equal(scriptc.rand(2).numpy(), after.numpy())  # the stream is drawn from once
    with fw.dual_level():
        scriptc.manual_seed(3)
        dual = fw.make_dual(scriptc.ones(64), scriptc.full((64,), 3.0)).clone()
        scriptc.nn.functional.dropout(dual, 0.5, inplace=True)
        primal_inplace, tangent_inplace = fw.unpack_dual(dual)
    np.testing.assert_array_equal(primal_inplace.numpy(), primal.numpy())
    np.testing.assert_array_equal(tangent_inplace.numpy(), tangent.numpy())


def test_a_dual_tensor_prints_its_tangent_like_torch():
    texts = []
    for T in (torch, scriptc):
        with T.autograd.forward_ad.dual_level():
            dual = T.autograd.forward_ad.make_dual(T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0]))
            texts.append((repr(dual), repr(dual * 2)))
    assert texts[1] == texts[0]


def test_a_tangent_laid_out_as_its_primal_is_kept_and_another_is_copied():
    for lib in (scriptc, torch):
        fw = lib.autograd.forward_ad
        primal, tangent = lib.tensor(X), lib.tensor(TANGENT.T.copy()).T
        same = lib.tensor(TANGENT)
        with fw.dual_level():
            assert fw.unpack_dual(fw.make_dual(primal, same)).tangent is same
            copied = fw.unpack_dual(fw.make_dual(primal, tangent)).tangent
            assert copied is not tangent and copied.is_contiguous()
            np.testing.assert_array_equal(copied.numpy(), TANGENT)


def _scaled_exp(lib, with_jvp: bool):
    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.result = x.exp()
            return ctx.result * scale, x * 1.0

    if with_jvp:
        # deliberately not the derivative: the tangents must be what jvp says, not what forward's ops give
        ScaledExp.jvp = staticmethod(lambda ctx, x_tangent, scale_tangent: (x_tangent * 3, x_tangent + 1))
    return ScaledExp


def test_an_autograd_function_gives_the_tangents_its_jvp_returns():
    results = []
    for lib in (scriptc, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(X), lib.tensor(TANGENT))
            first, second = _scaled_exp(lib, True).apply(dual, 2.0)
            results.append([fw.unpack_dual(t).tangent.numpy() for t in (first, second)] + [first.detach().numpy()])
            with pytest.raises(NotImplementedError, match="You must implement the jvp function for custom "
                                                          "autograd.Function to use it with forward mode AD"):
                _scaled_exp(lib, False).apply(dual, 2.0)
            plain = _scaled_exp(lib, False).apply(lib.tensor(X), 2.0)[0]
            assert fw.unpack_dual(plain).tangent is None
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
