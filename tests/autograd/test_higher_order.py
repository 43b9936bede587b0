"""create_graph=True: second derivatives (gradgradcheck per op), WGAN-GP and MAML against torch 2.13."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from scriptc.autograd import gradgradcheck

F = scriptc.nn.functional


def _t(shape, seed=0, low=None):
    data = np.random.default_rng(seed).standard_normal(shape)
    if low is not None:
        data = np.abs(data) + low
    return scriptc.tensor(data, requires_grad=True)


def _unit(shape, seed=0):
    return scriptc.tensor(np.random.default_rng(seed).uniform(0.1, 0.9, shape), requires_grad=True)


CASES = {
    "mul": (lambda a, b: a * b, lambda: (_t((2, 3)), _t((3,), 1))),
    "div": (lambda a, b: a / b, lambda: (_t((2, 3)), _t((2, 3), 1, low=0.5))),
    "pow scalar": (lambda a: a ** 3, lambda: (_t((4,)),)),
    "pow tensor": (lambda a, b: a ** b, lambda: (_t((3,), low=0.5), _t((3,), 1))),
    "exp log sqrt": (lambda a: a.exp() + a.log() + a.sqrt() + a.rsqrt() + a.reciprocal(), lambda: (_t((3,), low=0.5),)),
    "trig": (lambda a: a.sin() * a.cos() + a.square(), lambda: (_t((3,)),)),
    "tanh sigmoid": (lambda a: a.tanh() * a.sigmoid(), lambda: (_t((2, 3)),)),
    "activations": (lambda a: F.silu(a) + F.softplus(a, 2.0) + F.gelu(a) + F.elu(a) + F.logsigmoid(a),
                    lambda: (_t((5,)),)),
    "piecewise": (lambda a: F.relu(a) * a + F.leaky_relu(a, 0.2) * a + a.abs() * a + a.clamp(-0.5, 0.5) * a,
                  lambda: (_t((6,)),)),
    "softmax": (lambda a: F.softmax(a, 1) * F.log_softmax(a, 0), lambda: (_t((2, 3)),)),
    "linear": (lambda x, w, b: F.linear(x, w, b).tanh(), lambda: (_t((2, 3)), _t((4, 3), 1), _t((4,), 2))),
    "matmul": (lambda a, b, v: (a @ b).tanh().sum(0) @ v, lambda: (_t((2, 3)), _t((2, 3, 4), 1), _t((4,), 2))),
    "mm addmm bmm": (lambda a, b, c: (scriptc.addmm(c, a, b, beta=0.5, alpha=2.0) + a.mm(b)).tanh()
                     + scriptc.bmm(a[None], b[None])[0], lambda: (_t((2, 3)), _t((3, 2), 1), _t((2, 2), 2))),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1).tanh(),
               lambda: (_t((1, 2, 4, 4)), _t((2, 2, 3, 3), 1), _t((2,), 2))),
    "conv2d groups": (lambda x, w: F.conv2d(x, w, groups=2, dilation=2).sigmoid(),
                      lambda: (_t((1, 2, 5, 5)), _t((4, 1, 2, 2), 1))),
    "losses": (lambda x, t, p: F.mse_loss(x, t) + F.binary_cross_entropy(p, t.sigmoid()),
               lambda: (_t((2, 3)), _t((2, 3), 1), _unit((2, 3), 2))),
    "cross_entropy": (lambda x, w: F.cross_entropy(x * w, scriptc.tensor([0, 2, 1])), lambda: (_t((3, 3)), _t((3,), 1))),
    "norms": (lambda a: a.norm() * a.norm(dim=1).sum() + scriptc.linalg.vector_norm(a, 1), lambda: (_t((2, 3)),)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b).tanh(), lambda: (_t((2, 3)), _t((3,), 1), _t((3,), 2))),
    "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True).tanh(),
                   lambda: (_t((4, 2)), _t((2,), 1), _t((2,), 2))),
    "linear ops": (lambda a, b: (scriptc.cat([a, b], 0).reshape(3, 4).t()[1:].sum(0) * a.mean()
                                 + scriptc.stack([a, b]).permute(1, 0, 2).flatten().sum() ** 2),
                   lambda: (_t((1, 6)), _t((1, 6), 1))),
    "multilinear": (lambda a, b, v: scriptc.einsum("ij,jk->ik", a, b).tanh().sum() * scriptc.dot(v, v)
                    + scriptc.outer(v, v).sin().sum() + scriptc.mv(b.t(), v).exp().sum()
                    + scriptc.tensordot(a, b.t(), 2) * scriptc.kron(v, v).sum(),
                    lambda: (_t((2, 3)), _t((3, 2), 1), _t((3,), 2))),
    "pooling": (lambda x: F.avg_pool2d(x, 2).tanh() * F.adaptive_avg_pool2d(x, 1) * F.max_pool2d(x, 3, 2, 1),
                lambda: (_t((1, 1, 4, 4)),)),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1).tanh(),
                         lambda: (_t((1, 2, 3, 3)), _t((2, 3, 3, 3), 1), _t((3,), 2))),
    "group instance norm": (lambda x, w: F.group_norm(x, 2, w).tanh() + F.instance_norm(x, weight=w).sigmoid(),
                            lambda: (_t((2, 4, 3)), _t((4,), 1))),
    "more activations": (lambda a, w: F.hardswish(a) * a + F.mish(a) + F.softsign(a) * a + F.prelu(a, w) * a
                         + scriptc.logsumexp(a, 1).sum() + scriptc.maximum(a, a.flip(1)) * a,
                         lambda: (_t((2, 3)), _t((1,), 1))),
    "var std": (lambda a: a.var() + a.std(1).sum() + a.var(0, keepdim=True).sum() * a.std(correction=0)
                + sum(v.sum() for v in scriptc.var_mean(a, 1)) * scriptc.std_mean(a)[0], lambda: (_t((3, 4)),)),
    "max min": (lambda a: a.max() * a.min() + a.max(1).values.sum() * a.min(0, keepdim=True)[0].sum()
                + a.amax((0, 1)) + a.amin(1).sum() + a.clamp(max=0.5).max() * a.sum(), lambda: (_t((3, 4)),)),
    "prod": (lambda a: a.prod() + a.prod(1).sum() * a.prod(0, keepdim=True).sum(), lambda: (_t((3, 4)),)),
    "prod with zeros": (lambda a: a.prod() + a.prod(1).sum() * a.prod(0).sum(),
                        lambda: (scriptc.tensor([[0.0, 1.5, -2.0, 0.0], [1.2, 0.7, 0.0, -0.4], [0.3, 2.0, 1.1, -1.0]],
                                                dtype=scriptc.float64, requires_grad=True),)),
    "embedding": (lambda w: (F.embedding(scriptc.tensor([[0, 2], [2, 1]]), w) ** 3).sum(), lambda: (_t((4, 3)),)),
    "interpolate": (lambda x: (F.interpolate(x, scale_factor=2, mode="bilinear") ** 2).sum()
                    + (F.interpolate(x, size=(3, 5)) ** 3).sum() + F.interpolate(x, scale_factor=1.5, mode="bicubic")
                    .tanh().sum(), lambda: (_t((1, 2, 3, 3)),)),
    "cumsum": (lambda x: (x.cumsum(1) ** 2).sum(), lambda: (_t((3, 4)),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_finite_differences(name):
    func, make = CASES[name]
    assert gradgradcheck(func, make(), atol=1e-4, rtol=1e-3)


def _recurrent(lib, kind):
    """An LSTMCell/GRUCell/LSTM/GRU of 3 inputs and 2 hidden units in float64, with the same weights in both libraries."""
    module = getattr(lib.nn, kind)(3, 2).double()
    rng = np.random.default_rng(9)
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    return module


SECOND_ORDER = {
    "var std": lambda T, x: x.var(1).sum() * x.std() + T.var_mean(x, 0)[0].sum() + T.std_mean(x)[0],
    "max min": lambda T, x: x.max() * x.amin(1).sum() + x.max(1).values.sum() * x.min(0)[0].sum(),
    "prod": lambda T, x: x.prod(1).sum() * x.prod(),
    "embedding": lambda T, x: sum((T.nn.functional.embedding(T.tensor([[0, 2], [2, 1]]), x, **options) ** 3).sum()
                                  for options in ({}, {"padding_idx": 2}, {"scale_grad_by_freq": True})),
    "interpolate": lambda T, x: sum((T.nn.functional.interpolate(x[None, None], scale_factor=2, mode=mode) ** 3).sum()
                                    for mode in ("nearest", "bilinear", "bicubic")),
    "LSTMCell": lambda T, x: sum((o ** 2).sum() for o in _recurrent(T, "LSTMCell")(x[:, :3], (x[:, 2:], x[:, 1:3]))),
    "GRUCell": lambda T, x: (_recurrent(T, "GRUCell")(x[:, :3], x[:, 2:]) ** 3).sum(),
    "LSTM": lambda T, x: (_recurrent(T, "LSTM")(x[:, :3].unsqueeze(1))[0] ** 3).sum(),
    "GRU": lambda T, x: (_recurrent(T, "GRU")(x[:, :3].unsqueeze(1))[0] ** 3).sum(),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_derivatives_match_torch(name):
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(4).standard_normal((3, 4))
    results = []
    for T in (torch, scriptc):
        x = T.tensor(x0, requires_grad=True)
        (g,) = T.autograd.grad(SECOND_ORDER[name](T, x), x, create_graph=True)
        (h,) = T.autograd.grad((g * g).sum(), x)
        results.append((g.detach().numpy(), h.numpy()))
    (tg, th), (sg, sh) = results
    np.testing.assert_allclose(sg, tg, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(sh, th, rtol=1e-9, atol=1e-10)


# Programs over x, y in (0.1, 0.9), inside every op's domain.
SECOND_ORDER_UNIT = {
    "elementwise math": lambda T, x, y: (x.erf() + x.erfc() * x + x.log2() + x.log10() + x.exp2() + x.tan() + x.asin()
                                         + x.acos() + x.atan() + x.sinh() + x.cosh() + x.asinh() + (x + 1.5).acosh()
                                         + x.atanh() + T.nn.functional.tanhshrink(x) + x.lgamma() + x.digamma()
                                         + x.logit() + x.logit(eps=0.3) + x.erfinv() + T.special.ndtr(x)).sum() ** 2,
    "activations": lambda T, x, y: (((T.nn.functional.selu(x - 0.5) + T.nn.functional.celu(x - 0.5, 0.7)) ** 3).sum()
                                    + T.nn.functional.glu(x, 1).pow(2).sum()
                                    + T.nn.functional.softmin(x, 1).pow(2).sum()),
    "binary": lambda T, x, y: (T.atan2(x, y) + T.hypot(x, y) + T.logaddexp(x, y) + T.logaddexp2(x, y) + T.xlogy(x, y)
                               + T.lerp(x, y, 0.3) + T.lerp(x, y, y) + T.addcmul(x, x, y, value=0.5)
                               + T.addcdiv(x, x, y, value=2)).pow(2).sum(),
    "products": lambda T, x, y: (T.addmv(x[:, 0], x, y[0]).pow(2).sum()
                                 + T.baddbmm(x[:1, :3].unsqueeze(0), x.unsqueeze(0), y.t().unsqueeze(0)[:, :, :3])
                                 .pow(2).sum()
                                 + T.addbmm(x[:, :3], x.unsqueeze(0), y.t()[:, :3].unsqueeze(0), beta=0.5, alpha=2)
                                 .pow(2).sum() + T.addr(x, x[:, 0], y[0]).pow(2).sum()),
    "sorting": lambda T, x, y: ((x.sort(1).values * y).pow(2).sum() + x.topk(2, 0).values.pow(3).sum()
                                + x.kthvalue(2, 1).values.pow(2).sum() + x.median(1, keepdim=True).values.pow(2).sum()
                                + x.median() ** 2 + x.cummax(1).values.pow(2).sum() + x.cummin(0).values.pow(2).sum()
                                + T.mode(x.round(decimals=1), 0).values.pow(2).sum()),
    "linear ops": lambda T, x, y: ((T.deg2rad(x) * T.rad2deg(x)).sum() + T.diag(x).pow(2).sum()
                                   + T.fliplr(x).mul(y).pow(2).sum() + T.rot90(x).pow(2).sum()
                                   + T.take(x, T.tensor([0, 5, 5])).pow(2).sum() + T.diff(x, dim=1).pow(2).sum()
                                   + T.block_diag(x, y).pow(3).sum() + T.hsplit(x, 2)[1].pow(2).sum()
                                   + x.unfold(1, 2, 1).pow(2).sum() + T.frac(x * 3).mul(x).sum()
                                   + T.dstack([x, y]).pow(3).sum()),
}


def test_second_derivatives_of_conv1d_and_max_pool1d_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 2, 3)), rng.standard_normal(6)
    results = []
    for T in (torch, scriptc):
        x, w, b = (T.tensor(a, requires_grad=True) for a in arrays)
        F_ = T.nn.functional
        out = ((F_.conv1d(x, w, b, stride=2, padding=1, groups=2).tanh() ** 2).sum()
               + (F_.conv1d(x[0], w[:, :, :2].repeat(1, 2, 1), None, padding="same", dilation=2) ** 3).sum()
               + (F_.max_pool1d(x, 3, 2, 1) ** 3).sum() + (F_.max_pool1d(x[0], 2) ** 2).sum())
        first = T.autograd.grad(out, (x, w, b), create_graph=True)
        second = T.autograd.grad(sum((g * g).sum() for g in first), (x, w, b))
        results.append([t.detach().numpy() for t in first + second])
    for actual, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", list(SECOND_ORDER_UNIT))
def test_second_derivatives_of_elementwise_and_sorting_ops_match_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x0, y0 = rng.uniform(0.1, 0.8, (3, 4)), rng.uniform(0.2, 0.9, (3, 4))
    results = []
    for T in (torch, scriptc):
        x, y = T.tensor(x0, requires_grad=True), T.tensor(y0, requires_grad=True)
        first = T.autograd.grad(SECOND_ORDER_UNIT[name](T, x, y), (x, y), create_graph=True, materialize_grads=True)
        second = T.autograd.grad(sum((g * g).sum() for g in first), (x, y), materialize_grads=True)
        results.append([t.detach().numpy() for t in first + second])
    for actual, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(actual, expected, rtol=1e-7, atol=1e-9)


def test_an_op_without_a_differentiable_formula_raises_when_differentiated_twice():
    x = _t((1, 1, 3, 3))
    grid = scriptc.zeros(1, 2, 2, 2, dtype=scriptc.float64)
    (g,) = scriptc.autograd.grad(F.grid_sample(x, grid, align_corners=False).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match=r"derivative for aten::grid_sample_backward is not implemented"):
        (g * g).sum().backward()


def _copy_params(source, target):
    with scriptc.no_grad():
        for (_, p), (_, q) in zip(source.named_parameters(), target.named_parameters()):
            q.copy_(scriptc.tensor(p.detach().numpy()))


def _wgan_gp_steps(lib, critic, generator, steps=3):
    rng = np.random.default_rng(5)
    opt = lib.optim.Adam(critic.parameters(), lr=1e-2, betas=(0.5, 0.9))
    for _ in range(steps):
        real = lib.tensor(rng.standard_normal((4, 1, 6, 6)).astype(np.float32))
        noise = lib.tensor(rng.standard_normal((4, 5)).astype(np.float32))
        alpha = lib.tensor(rng.uniform(size=(4, 1, 1, 1)).astype(np.float32))
        fake = generator(noise).reshape(4, 1, 6, 6).detach()
        mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        (grads,) = lib.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
        penalty = ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in critic.parameters()]


def _critic(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 4, 3, 1, 1), nn.LeakyReLU(0.2),
                         nn.Flatten(), nn.Linear(36, 1))


def test_wgan_gp_gradient_penalty_trains_like_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    critic_t, gen_t = _critic(torch), torch.nn.Sequential(torch.nn.Linear(5, 36), torch.nn.Tanh())
    critic_s, gen_s = _critic(scriptc), scriptc.nn.Sequential(scriptc.nn.Linear(5, 36), scriptc.nn.Tanh())
    _copy_params(critic_t, critic_s)
    _copy_params(gen_t, gen_s)
    for a, b in zip(_wgan_gp_steps(torch, critic_t, gen_t), _wgan_gp_steps(scriptc, critic_s, gen_s)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def _maml_meta_gradients(lib, params):
    rng = np.random.default_rng(9)
    fn = lib.nn.functional
    support = lib.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    support_y = lib.tensor(rng.integers(0, 3, 8))
    query = lib.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    query_y = lib.tensor(rng.integers(0, 3, 8))

    def net(x, w1, b1, w2, b2):
        return fn.linear(fn.relu(fn.linear(x, w1, b1)), w2, b2)
    grads = lib.autograd.grad(fn.cross_entropy(net(support, *params), support_y), params, create_graph=True)
    fast = [p - 0.4 * g for p, g in zip(params, grads)]
    grads = lib.autograd.grad(fn.cross_entropy(net(support, *fast), support_y), fast, create_graph=True)
    fast = [p - 0.4 * g for p, g in zip(fast, grads)]
    fn.cross_entropy(net(query, *fast), query_y).backward()
    return [p.grad.numpy().copy() for p in params]


def test_maml_inner_steps_give_torchs_meta_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    shapes = [(6, 4), (6,), (3, 6), (3,)]
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]
    expected = _maml_meta_gradients(torch, [torch.tensor(a, requires_grad=True) for a in arrays])
    ours = _maml_meta_gradients(scriptc, [scriptc.tensor(a, requires_grad=True) for a in arrays])
    for a, b in zip(expected, ours):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_backward_create_graph_makes_grad_differentiable_and_inputs_limits_accumulation():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, scriptc):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True, dtype=lib.float64)
        w = lib.tensor([1.5, 0.5, -0.5], requires_grad=True, dtype=lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once a process about the reference cycle
            (x.sin() * w).sum().backward(create_graph=True)
        assert x.grad.requires_grad
        first = x.grad.detach().clone()
        x.grad.sum().backward(inputs=[w])
        results.append((first.numpy(), w.grad.detach().numpy().copy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_grad_names_the_unused_input_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, scriptc):
        x, unused = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^The differentiated Tensor at index 1 appears to not have been used "
                                               r"in the graph\. Set allow_unused=True if this is the desired "
                                               r"behavior\.$"):
            lib.autograd.grad((x * 2).sum(), [x, unused])
