"""torch.<name> functions with ATen's signature where torch.nn.functional's differs (weight first in
torch.embedding, reduction as a number, the tuple results), eagerly and in scripted code, against torch 2.13."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _calls(T, t, idx):
    """name -> a call of T's ATen-order function; t(*shape) and idx(list) build inputs in T."""
    x4 = t(2, 3, 4, 4)
    weight, bias, mean, table = t(3), t(3), t(3), t(10, 4)
    var = t(3).abs() + 0.5
    log_probs = T.log_softmax(t(6, 2, 5), 2)
    return {
        "embedding": lambda: T.embedding(table, idx([[1, 2], [3, 9]])),
        "embedding padding": lambda: T.embedding(table, idx([1, 2, 3]), 2, False, False),
        "embedding_bag mean": lambda: T.embedding_bag(table, idx([1, 2, 3, 4, 5]), idx([0, 2]), False, 1),
        "embedding_bag max": lambda: T.embedding_bag(table, idx([1, 2, 3, 4, 5]), idx([0, 2]), False, 2)[0::3],
        "embedding_bag padding": lambda: T.embedding_bag(table, idx([1, 2, 3, 4, 2]), idx([0, 2]), False, 1, False,
                                                         None, False, 2),
        "embedding_bag sum": lambda: T.embedding_bag(table, idx([1, 2, 3, 4, 5]), idx([0, 2]))[0],
        "batch_norm": lambda: T.batch_norm(x4, weight, bias, mean, var, False, 0.1, 1e-5, False),
        "batch_norm training": lambda: (T.batch_norm(x4, None, None, mean, var, True, 0.1, 1e-5, True), mean, var),
        "instance_norm": lambda: T.instance_norm(x4, weight, bias, None, None, True, 0.1, 1e-5, False),
        "layer_norm": lambda: T.layer_norm(x4, [4, 4], t(4, 4), t(4, 4), 1e-5, False),
        "group_norm": lambda: T.group_norm(x4, 3, weight, bias, 1e-5, False),
        "native_layer_norm": lambda: T.native_layer_norm(x4, [4], None, None, 1e-5),
        "native_batch_norm": lambda: T.native_batch_norm(x4, weight, bias, mean, var, True, 0.1, 1e-5),
        "native_batch_norm eval": lambda: T.native_batch_norm(x4, weight, bias, mean, var, False, 0.1, 1e-5),
        "ctc_loss lists": lambda: T.ctc_loss(log_probs, idx([[1, 2], [3, 3]]), [6, 5], [2, 2]),
        "ctc_loss tensors sum": lambda: T.ctc_loss(log_probs, idx([[1, 2], [3, 3]]), idx([6, 5]), idx([2, 2]), 0, 2),
        "kl_div": lambda: T.kl_div(x4, x4.exp()),
        "kl_div mean": lambda: T.kl_div(x4, x4, 1, log_target=True),
        "bce_with_logits": lambda: T.binary_cross_entropy_with_logits(x4, x4.sigmoid(), None, None, 2),
        "cosine_embedding_loss": lambda: T.cosine_embedding_loss(t(3, 4), t(3, 4), idx([1, -1, 1]), 0.1, 1),
        "hinge_embedding_loss": lambda: T.hinge_embedding_loss(t(3, 4), T.ones(3, 4)),
        "margin_ranking_loss": lambda: T.margin_ranking_loss(t(3), t(3), T.ones(3), 0.0, 2),
        "poisson_nll_loss": lambda: T.poisson_nll_loss(t(3), t(3).abs(), True, False, 1e-8, 1),
        "triplet_margin_loss": lambda: T.triplet_margin_loss(t(3, 4), t(3, 4), t(3, 4), 1.0, 2.0, 1e-6, True, 0),
        "adaptive_max_pool1d": lambda: T.adaptive_max_pool1d(t(2, 3, 8), [4]),
        "max_pool1d_with_indices": lambda: T.max_pool1d_with_indices(t(2, 3, 8), [2]),
        "grid_sampler": lambda: T.grid_sampler(x4, t(2, 3, 3, 2).tanh(), 1, 1, True),
        "affine_grid_generator": lambda: T.affine_grid_generator(t(2, 2, 3), [2, 3, 4, 4], False),
    }


def _results(T, name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    calls = _calls(T, lambda *shape: T.tensor(rng.standard_normal(shape).astype(np.float32)),
                   lambda values: T.tensor(np.array(values, dtype=np.int64)))
    result = calls[name]()
    return [r.detach().numpy() for r in (result if isinstance(result, (tuple, list)) else [result])]


@pytest.mark.parametrize("name", list(_calls(scriptc, scriptc.ones, scriptc.tensor)))
def test_aten_order_matches_torch(name):
    ours, theirs = _results(scriptc, name), _results(torch, name)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_reduction_left_out_is_none_eagerly_and_mean_in_script():
    x, y = scriptc.randn(3, 4), scriptc.rand(3, 4)

    def losses(x, y):
        return scriptc.hinge_embedding_loss(x, y), scriptc.kl_div(x, y)

    assert [r.shape for r in losses(x, y)] == [(3, 4), (3, 4)]
    scripted = scriptc.jit.script(losses)
    np.testing.assert_allclose(scripted(x, y)[0].numpy(), losses(x, y)[0].mean().numpy(), rtol=1e-6)
    assert scripted(x, y)[1].shape == ()


def test_scripted_aten_calls_match_eager():
    table, indices, offsets = scriptc.randn(10, 4), scriptc.tensor([1, 2, 3, 4, 5]), scriptc.tensor([0, 2])
    x, weight, bias = scriptc.randn(2, 3, 4, 4), scriptc.randn(3), scriptc.randn(3)

    def lookups(table, indices, offsets, x, weight, bias):
        bags = scriptc.embedding_bag(table, indices, offsets, False, 2)
        return (scriptc.embedding(table, indices, 2), bags[0], bags[3],
                scriptc.batch_norm(x, weight, bias, None, None, True, 0.1, 1e-5, False),
                scriptc.ctc_loss(x[0, :, :1].log_softmax(2), indices[:2].unsqueeze(0), [3], [2], 0, 2))

    args = (table, indices, offsets, x, weight, bias)
    for a, b in zip(scriptc.jit.script(lookups)(*args), lookups(*args)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_embedding_bag_refuses_an_unknown_mode():
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):  # (torch's words)
        scriptc.embedding_bag(scriptc.randn(4, 2), scriptc.tensor([1, 2]), scriptc.tensor([0]), False, 3)


@pytest.mark.parametrize("modes", [(3, 0), (-1, 0), (0, 3)])
def test_grid_sampler_refuses_an_unknown_mode(modes):
    x, grid = scriptc.randn(1, 1, 2, 2), scriptc.zeros(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="_mode must be 0"):
        scriptc.grid_sampler(x, grid, *modes, False)


@pytest.mark.parametrize("call", [
    "T.embedding(None, T.tensor([1]))",
    "T.group_norm([1.0], 1)",
    "T.batch_norm(T.ones(2, 3), 'w', None, None, None, True, 0.1, 1e-5, False)",
    "T.kl_div(T.ones(2), target=3)",
])
def test_a_non_tensor_for_a_tensor_raises_torchs_type_error(call):
    from tests.torch_errors import raised

    assert raised(lambda: eval(call, {"T": scriptc})) == raised(lambda: eval(call, {"T": torch}))
