"""Tensor semantics: dtypes and promotion, views and versions, conversion, printing, typed errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ShapeError

try:
    import torch as real_torch
except ImportError:
    real_torch = None


def test_dtype_inference_follows_pytorch():
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.tensor([1.0]).dtype is torch.float32
    assert torch.tensor([True, False]).dtype is torch.bool
    assert torch.tensor([1, 2.5]).dtype is torch.float32
    assert torch.tensor(np.zeros(2)).dtype is torch.float64
    assert torch.tensor(3).dim() == 0


@pytest.mark.parametrize("make, expected", [
    (lambda: torch.tensor([1, 2]) + 2.5, "float32"),
    (lambda: torch.tensor([1, 2]) / 2, "float32"),
    (lambda: torch.tensor([1, 2]) / torch.tensor([2, 4]), "float32"),
    (lambda: torch.tensor([1, 2]) * 2, "int64"),
    (lambda: torch.tensor([1.0], dtype=torch.float16) * 2.0, "float16"),
    (lambda: torch.tensor([1.0]) + torch.tensor(2.0, dtype=torch.float64), "float32"),
    (lambda: torch.tensor([1.0]) + torch.tensor([2.0], dtype=torch.float64), "float64"),
    (lambda: torch.tensor([1], dtype=torch.int32) + torch.tensor([1]), "int64"),
    (lambda: torch.tensor([True]) + 1, "int64"),
    (lambda: torch.tensor([1, 2]) > 1.5, "bool"),
    (lambda: torch.tensor([1, 2]).sum(), "int64"),
    (lambda: torch.tensor([1, 4]).sqrt(), "float32"),
])
def test_type_promotion(make, expected):
    assert make().dtype.name == expected


def test_promotion_matches_torch_exhaustively():
    if real_torch is None:
        pytest.skip("torch is not installed")
    dtypes = ["bool", "int32", "int64", "float16", "float32", "float64"]
    for a in dtypes:
        for b in dtypes:
            for b_dims in (0, 1):
                x = torch.ones(2, dtype=getattr(torch, a if a != "bool" else "bool"))
                y = torch.ones((2,) * b_dims, dtype=getattr(torch, b))
                tx = real_torch.ones(2, dtype=getattr(real_torch, a))
                ty = real_torch.ones((2,) * b_dims, dtype=getattr(real_torch, b))
                assert (x * y).dtype.name == str((tx * ty).dtype)[6:], (a, b, b_dims)
            for scalar in (2, 2.5, True):
                assert (x * scalar).dtype.name == str((tx * scalar).dtype)[6:], (a, scalar)


def test_views_share_storage_and_version():
    base = torch.zeros(3, 4)
    for view in (base.view(12), base[1:], base.transpose(0, 1), base[:, 1], base.reshape(4, 3)):
        before = base._version
        view.add_(1)
        assert base._version == view._version == before + 1
    base2 = torch.zeros(2, 3)
    base2[0].fill_(5)
    assert base2.tolist() == [[5, 5, 5], [0, 0, 0]]
    t = base2.t()
    assert not t.is_contiguous() and t.contiguous().is_contiguous()
    assert base2.contiguous() is base2


def test_expand_is_a_view_and_refuses_writes():
    x = torch.tensor([[1.0], [2.0]])
    e = x.expand(2, 3)
    assert e.shape == (2, 3) and e.stride() == (1, 0)
    with pytest.raises(RuntimeError, match="more than one element"):
        e.add_(1)


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4.0)
    t = torch.from_numpy(a)
    t.mul_(2)
    assert a.tolist() == [0, 2, 4, 6]
    a[0] = 9
    assert t[0].item() == 9
    assert np.asarray(t) is a or np.shares_memory(np.asarray(t), a)
    assert t.numpy() is a
    with pytest.raises(TypeError):
        torch.from_numpy(np.array(["a", "b"]))


def test_conversions():
    t = torch.tensor([[1.5, 2.0]])
    assert t.tolist() == [[1.5, 2.0]]
    assert torch.tensor(2.5).item() == 2.5
    assert t.shape == (1, 2) and t.size() == (1, 2) and t.size(-1) == 2 and t.dim() == 2
    assert repr(t.shape) == "torch.Size([1, 2])"
    assert t.device == torch.device("cpu") and str(t.device) == "cpu"
    assert t.to(torch.float64).dtype is torch.float64 and t.to(torch.float32) is t
    assert t.long().dtype is torch.int64 and t.bool().dtype is torch.bool
    assert float(torch.tensor(2.0)) == 2.0 and int(torch.tensor(3)) == 3
    assert list(range(10))[torch.tensor(3)] == 3
    with pytest.raises(RuntimeError, match="cannot be converted"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).numpy()


def test_new_and_like_keep_dtype():
    t = torch.ones(2, dtype=torch.float64)
    assert t.new_zeros(3).dtype is torch.float64 and t.new_zeros(3).shape == (3,)
    assert t.new_ones((2, 2)).shape == (2, 2)
    assert t.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert t.new_tensor([1, 2]).dtype is torch.float64
    assert torch.zeros_like(t).dtype is torch.float64
    assert torch.full((2,), 3).dtype is torch.int64


def test_manual_seed_is_reproducible():
    torch.manual_seed(3)
    a = (torch.rand(4), torch.randn(4), torch.randint(0, 10, (4,)), torch.nn.functional.dropout(torch.ones(8)))
    torch.manual_seed(3)
    b = (torch.rand(4), torch.randn(4), torch.randint(0, 10, (4,)), torch.nn.functional.dropout(torch.ones(8)))
    for x, y in zip(a, b):
        assert x.tolist() == y.tolist()
    assert a[2].dtype is torch.int64 and 0 <= a[2].min().item() and a[2].max().item() < 10
    big = torch.randn(20000)
    assert abs(big.mean().item()) < 0.05 and abs(big.std().item() - 1) < 0.05


def test_indexing_matches_numpy():
    a = np.arange(60.0).reshape(3, 4, 5)
    t = torch.tensor(a)
    for index in [(1,), (slice(None), 1), (Ellipsis, 2), (None, 0), (slice(1, None), slice(None, None, 2)),
                  (slice(None), slice(1, -1, 2), None, Ellipsis), (-1, -1, -1)]:
        np.testing.assert_array_equal(t[index].numpy(), a[index])
    idx = np.array([2, 0])
    np.testing.assert_array_equal(t[torch.tensor(idx)].numpy(), a[idx])
    np.testing.assert_array_equal(t[t > 30].numpy(), a[a > 30])
    t[0, 0] = -1
    t[t > 50] = 0
    a[0, 0] = -1
    a[a > 50] = 0
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.skipif(real_torch is None, reason="needs torch")
@pytest.mark.parametrize("index", [
    range(2), range(0), [], (range(3), [0, 2, 1]), ((0, 2), 1), (slice(None), range(3, 0, -1)),
    (Ellipsis, [True, False, True, True]), ([[0, 1], [2, 2]], range(2)),
    [0.1, 1.2, 2.3], [True, 0.5], (slice(None), [3.9, 0.0]), np.array([2.5, 0.5]), [np.int32(1)],
], ids=str)
def test_sequence_indices_match_torch(index):
    """Ranges, tuples inside the index and empty lists index as torch turns them into index tensors
    (mnist_forward_forward writes x_[range(x.shape[0]), y] = x.max()); a list of floats is int64,
    truncated (upstream test_python_builtins.test_adv_indexing_list)."""
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours, theirs = torch.from_numpy(a.copy()), real_torch.from_numpy(a.copy())
    np.testing.assert_array_equal(ours[index].numpy(), theirs[index].numpy())
    ours[index] = -1.0
    theirs[index] = -1.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.skipif(real_torch is None, reason="needs torch")
def test_out_of_bounds_index_names_the_first_bad_one_as_torch():
    for index in ([5, 3, 4], [0, -7, 9], range(5)):
        with pytest.raises(IndexError) as theirs:
            real_torch.zeros(3, 4)[index]
        with pytest.raises(IndexError, match=f"^{theirs.value}$"):
            torch.zeros(3, 4)[index]


def test_repr_matches_pytorch_format():
    cases = [([1.0, 2.0, 3.0], None), ([1.5, 2.25], None), ([[1e-5, 1000.0]], None), ([1, 2, 3], None),
             ([1, 2], "int32"), ([True, False], None), ([], None), ([0.0, float("nan"), float("inf")], None),
             (list(range(2000)), None), ([[0.1234567, 100.5], [-3.0, 4.0]], None), (2.5, None)]
    expected = {
        0: "tensor([1., 2., 3.])", 1: "tensor([1.5000, 2.2500])", 2: "tensor([[1.0000e-05, 1.0000e+03]])",
        3: "tensor([1, 2, 3])", 4: "tensor([1, 2], dtype=torch.int32)", 5: "tensor([ True, False])",
        6: "tensor([])", 7: "tensor([0., nan, inf])", 10: "tensor(2.5000)",
    }
    for i, (data, dt) in enumerate(cases):
        t = torch.tensor(data, dtype=getattr(torch, dt) if dt else None)
        text = repr(t)
        if i in expected:
            assert text == expected[i]
        if real_torch is not None:
            ref = repr(real_torch.tensor(data, dtype=getattr(real_torch, dt) if dt else None))
            assert text == ref, i
    x = torch.ones(2, requires_grad=True)
    assert repr(x) == "tensor([1., 1.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"


@pytest.mark.parametrize("action, error, message", [
    (lambda: torch.ones(3) + torch.ones(4), ShapeError, r"size of tensor a \(3\) must match the size of tensor b \(4\)"),
    (lambda: torch.ones(2, 3) @ torch.ones(2, 3), ShapeError, r"cannot be multiplied \(2x3 and 2x3\)"),
    (lambda: torch.ones(2, 3).sum(dim=2), IndexError, r"Dimension out of range"),
    (lambda: torch.ones(2, 3).view(4), ShapeError, r"shape '\[4\]' is invalid for input of size 6"),
    (lambda: torch.ones(3)[torch.tensor([0.5])], IndexError, "tensors used as indices must be long"),
    (lambda: torch.ones(3)[[1.5 + 0j]], TypeError, "'complex' object cannot be interpreted as an integer"),
    (lambda: torch.ones(3)[5], IndexError, "out of bounds"),
    (lambda: torch.ones(2, 3).t().view(6), RuntimeError, "view size is not compatible"),
    (lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)]), ShapeError, "Sizes of tensors must match"),
    (lambda: torch.tensor([1, 2]).mean(), RuntimeError, "could not infer output dtype"),
    (lambda: torch.ones(2, 2).permute(0, 0), RuntimeError, "duplicate dims"),
    (lambda: torch.tensor([1, 2]).add_(0.5), RuntimeError, "result type Float can't be cast to the desired output "
                                                            "type Long"),
    (lambda: torch.ones(2, dtype=torch.bool).mul_(torch.ones(2, dtype=torch.int64)), RuntimeError,
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: torch.ones(3).expand(2, 4), ShapeError, "expanded size"),
])
def test_typed_errors(action, error, message):
    with pytest.raises(error, match=message):
        action()


def test_tensors_take_attributes_of_their_own_as_torch_does():
    import copy
    import pickle
    references = [real_torch] if real_torch is not None else []
    for T in [torch] + references:
        t = T.zeros(3)
        t.require_grad = False  # BERT-pytorch's typo for requires_grad: torch keeps it as an attribute
        t.tag = {"k": [1]}
        p = T.nn.Parameter(T.ones(2))
        p.sharded = True
        assert t.__dict__ == {"require_grad": False, "tag": {"k": [1]}} and not t.requires_grad
        clone = copy.deepcopy(t)
        assert clone.tag == t.tag and clone.tag is not t.tag
        assert pickle.loads(pickle.dumps(t)).tag == t.tag
        assert pickle.loads(pickle.dumps(p)).sharded and copy.deepcopy(p).__dict__ == {}  # (as torch)
        assert t.view(3).__dict__ == {} and t.detach().__dict__ == {}
        with pytest.raises(AttributeError, match="object has no attribute 'nothing_here'"):
            assert t.nothing_here is None
