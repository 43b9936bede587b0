"""Embedding, EmbeddingBag, one_hot, Bilinear, Identity, Flatten/Unflatten, distances and nn.parallel against
torch."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .compare import assert_same_error, compare_call, compare_module, constant

torch = pytest.importorskip("torch")

rng = np.random.default_rng(4)


def x(*shape):
    return rng.standard_normal(shape).astype(np.float32)



INDICES = np.array([[1, 4, 4], [0, 2, 4]])


@pytest.mark.parametrize("options", [dict(), dict(padding_idx=4), dict(padding_idx=-1, scale_grad_by_freq=True),
                                     dict(max_norm=1.0, norm_type=1.0)])
def test_embedding_options(options):
    compare_module(lambda T: T.nn.Embedding(5, 3, **options), [constant(INDICES)], modes=("train",))


def test_embedding_sparse_gradient_is_dense_with_torchs_values():
    table = x(5, 3)
    ours = scriptc.nn.Embedding.from_pretrained(scriptc.tensor(table), freeze=False, sparse=True)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=False, sparse=True)
    ours(scriptc.tensor(INDICES)).sum().backward()
    theirs(torch.tensor(INDICES)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.to_dense().numpy())


def test_embedding_max_norm_renormalizes_the_weight_in_place():
    layer = scriptc.nn.Embedding(4, 3, max_norm=0.5)
    with scriptc.no_grad():
        layer.weight.mul_(10)
    layer(scriptc.tensor([1, 1, 2]))
    norms = np.linalg.norm(layer.weight.detach().numpy(), axis=1)
    assert np.all(norms[[1, 2]] <= 0.5 + 1e-5) and np.all(norms[[0, 3]] > 0.5)


def test_embedding_from_pretrained():
    table = x(4, 3)
    frozen = scriptc.nn.Embedding.from_pretrained(scriptc.tensor(table), padding_idx=1)
    assert not frozen.weight.requires_grad and frozen.padding_idx == 1
    assert repr(frozen) == repr(torch.nn.Embedding.from_pretrained(torch.tensor(table), padding_idx=1))
    trainable = scriptc.nn.EmbeddingBag.from_pretrained(scriptc.tensor(table), freeze=False, mode="sum")
    assert trainable.weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        scriptc.nn.Embedding.from_pretrained(scriptc.ones(3))


@pytest.mark.parametrize("options, inputs", [
    (dict(mode="sum"), [constant(INDICES)]),
    (dict(mode="mean", padding_idx=4), [constant(INDICES)]),
    (dict(mode="max"), [constant(np.array([1, 2, 4, 0, 3, 3])), constant(np.array([0, 2, 2]))]),
    (dict(mode="sum", include_last_offset=True),
     [constant(np.array([1, 2, 4, 0, 3, 3])), constant(np.array([0, 1, 6])), x(6)]),
    (dict(mode="sum", max_norm=1.0), [constant(INDICES)]),
])
def test_embedding_bag_options(options, inputs):
    compare_module(lambda T: T.nn.EmbeddingBag(5, 3, **options), inputs, modes=("train",))


def test_one_hot():
    for args in [(np.array([0, 2, 1]),), (np.array([[0, 2], [1, 1]]), 4)]:
        ours = scriptc.nn.functional.one_hot(scriptc.tensor(args[0]), *args[1:])
        theirs = torch.nn.functional.one_hot(torch.tensor(args[0]), *args[1:])
        assert ours.dtype == scriptc.int64 and ours.tolist() == theirs.tolist()
    for call, message in [(lambda T: T.nn.functional.one_hot(T.tensor([1, -1])), "Class values must be non-negative."),
                          (lambda T: T.nn.functional.one_hot(T.tensor([1, 5]), 3),
                           "Class values must be smaller than num_classes."),
                          (lambda T: T.nn.functional.one_hot(T.tensor([1.0])),
                           "one_hot is only applicable to index tensor of type LongTensor.")]:
        for T in (torch, scriptc):
            with pytest.raises(RuntimeError, match=message):
                call(T)
    meta = [repr(T.nn.functional.one_hot(T.zeros(3, dtype=T.int64, device="meta"), 4)) for T in (scriptc, torch)]
    assert meta[0] == meta[1]  # (num_classes given: nothing is read from a meta tensor)


@pytest.mark.parametrize("errors", [
    (lambda T: T.nn.functional.embedding_bag(T.tensor([[1, 2]]), T.ones(5, 3), T.tensor([0])), ValueError,
     "if input is 2D, then offsets has to be None"),
    (lambda T: T.nn.functional.embedding_bag(T.tensor([1, 2]), T.ones(5, 3)), ValueError,
     "offsets has to be a 1D Tensor but got None"),
    (lambda T: T.nn.functional.embedding_bag(T.tensor([1, 2]), T.ones(5, 3), T.tensor([0, 1]), mode="max",
                                             per_sample_weights=T.ones(2)), NotImplementedError,
     "per_sample_weights is only supported for mode='sum' (got mode='max')"),
    (lambda T: T.nn.functional.embedding_bag(T.tensor([1, 2, 0, 7]), T.ones(5, 3), T.tensor([0, 1])), RuntimeError,
     "takes value 7 which is not in the valid range [0, 5)"),
    (lambda T: T.nn.functional.embedding_bag(T.tensor([1, 2]), T.ones(5, 3), T.tensor([1, 2])), RuntimeError,
     "offsets[0] has to be 0"),
    (lambda T: T.nn.functional.embedding(T.tensor([1, 7]), T.ones(5, 3)), IndexError, "index out of range in self"),
    (lambda T: T.nn.Embedding(3, 2, padding_idx=3), AssertionError, "Padding_idx must be within num_embeddings"),
])
def test_lookup_errors_match_torch(errors):
    call, error, message = errors
    assert_same_error(call, error, message)


def test_bilinear_identity_flatten_unflatten():
    compare_module(lambda T: T.nn.Bilinear(3, 4, 5), [x(2, 6, 3), x(2, 6, 4)])
    compare_module(lambda T: T.nn.Bilinear(3, 4, 5, bias=False), [x(3), x(4)], modes=("eval",))
    compare_module(lambda T: T.nn.Identity(3, unused=True), [x(2, 3)], modes=("eval",))
    compare_module(lambda T: T.nn.Flatten(0, 1), [x(2, 3, 4)], modes=("eval",))
    compare_module(lambda T: T.nn.Unflatten(1, (2, -1)), [x(3, 6, 2)], modes=("eval",))
    compare_module(lambda T: T.nn.Unflatten(-1, [3, 2]), [x(3, 6)], modes=("eval",))
    for call, error, message in [
            (lambda T: T.nn.Unflatten(1, (2, 3))(T.zeros(4, 7)), RuntimeError,
             "unflatten: Provided sizes [2, 3] don't multiply up to the size of dim 1 (7) in the input tensor"),
            (lambda T: T.nn.Unflatten(1, 5), TypeError, "unflattened_size must be a tuple of ints, but found type int"),
            (lambda T: T.nn.functional.bilinear(T.zeros(3, 4), T.zeros(2, 5), T.zeros(6, 4, 5)), RuntimeError,
             "bilinear(): input batch dimensions do not match at dim 0: got 3 and 2"),
            (lambda T: T.nn.functional.bilinear(T.zeros(3, 3), T.zeros(3, 5), T.zeros(6, 4, 5)), RuntimeError,
             "bilinear(): input1 size does not match weight size: got 3 but expected 4")]:
        for T in (torch, scriptc):
            with pytest.raises(error) as info:
                call(T)
            assert message in str(info.value)


@pytest.mark.parametrize("build, args", [
    (lambda T: T.nn.PairwiseDistance(), [x(4, 5), x(4, 5)]),
    (lambda T: T.nn.PairwiseDistance(p=1.0, keepdim=True), [x(4, 5), x(5)]),
    (lambda T: T.nn.PairwiseDistance(p=float("inf")), [x(4, 5), x(4, 5)]),
    (lambda T: T.nn.PairwiseDistance(p=3.0, eps=0.1), [x(5), x(5)]),
    (lambda T: T.nn.CosineSimilarity(), [x(4, 5), x(4, 5)]),
    (lambda T: T.nn.CosineSimilarity(dim=0, eps=1e-3), [x(4, 5), x(4, 1)]),
])
def test_distances_match_torch(build, args):
    compare_module(build, args, modes=("eval",))


def test_pdist_matches_torch():
    for p in (2.0, 1.0, 0.5):
        compare_call(lambda T, a: T.nn.functional.pdist(a, p), [x(5, 3)])


def _distances(a: scriptc.Tensor) -> scriptc.Tensor:
    return scriptc.nn.functional.pdist(a, 1.5)


def test_pdist_scripts():
    a = scriptc.tensor(x(6, 4))
    np.testing.assert_allclose(scriptc.jit.script(_distances)(a).numpy(), _distances(a).numpy(), rtol=1e-6)


def test_data_parallel_runs_the_module_on_the_whole_batch():
    inner = scriptc.nn.Linear(3, 2)
    wrapped = scriptc.nn.DataParallel(inner, device_ids=[0, 1])
    x_in = scriptc.randn(4, 3)
    np.testing.assert_array_equal(wrapped(x_in).detach().numpy(), inner(x_in).detach().numpy())
    np.testing.assert_array_equal(scriptc.nn.parallel.data_parallel(inner, x_in, range(2)).detach().numpy(),
                                  inner(x_in).detach().numpy())
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert repr(wrapped) == repr(torch.nn.DataParallel(torch.nn.Linear(3, 2)))
