"""Sparse COO tensors against torch 2.13: construction, coalesce, to_sparse/to_dense, products, gradients,
errors, and the adjacency preprocessing of pytorch/examples' GCN (gcn/main.py load_cora)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(31)
INDICES = np.array([[0, 2, 1, 2, 0], [1, 0, 2, 0, 1]])
VALUES = rng.standard_normal(5).astype(np.float32)


def _both(fn):
    return fn(torch), fn(scriptc)


def _close(expected, actual):
    np.testing.assert_allclose(np.asarray(actual.detach().numpy() if hasattr(actual, "detach") else actual),
                               expected.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_construction_coalesce_and_accessors():
    def build(T):
        return T.sparse_coo_tensor(T.tensor(INDICES), T.tensor(VALUES), (3, 3))

    t, s = _both(build)
    assert s.is_sparse and s.layout is scriptc.sparse_coo and not s.is_coalesced()
    assert s._nnz() == t._nnz() == 5 and tuple(s.shape) == tuple(t.shape)
    _close(t.to_dense(), s.to_dense())
    tc, sc = t.coalesce(), s.coalesce()
    assert sc.is_coalesced() and sc._nnz() == tc._nnz()
    np.testing.assert_array_equal(sc.indices().numpy(), tc.indices().numpy())
    _close(tc.values(), sc.values())
    assert repr(sc).replace("scriptc.", "torch.") == repr(tc)


def test_size_inferred_from_indices_and_hybrid_values():
    t, s = _both(lambda T: T.sparse_coo_tensor(T.tensor([[0, 3]]), T.ones(2, 2)))
    assert tuple(s.shape) == tuple(t.shape) == (4, 2)
    _close(t.to_dense(), s.to_dense())


def test_empty_of_a_size():
    t, s = _both(lambda T: T.sparse_coo_tensor((2, 3), dtype=T.float64))
    assert tuple(s.shape) == tuple(t.shape) and s._nnz() == t._nnz() == 0 and s.dtype is scriptc.float64
    _close(t.to_dense(), s.to_dense())


def test_to_sparse_round_trip_and_dtype():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    t, s = _both(lambda T: T.tensor(x).to_sparse())
    np.testing.assert_array_equal(s.indices().numpy(), t.indices().numpy())
    _close(t.values(), s.values())
    assert s.to(scriptc.float64).dtype is scriptc.float64 and s.to(scriptc.float64).is_sparse
    assert not scriptc.ones(2).is_sparse and scriptc.ones(2).layout is scriptc.strided


@pytest.mark.parametrize("spell", ["spmm", "sparse.mm", "mm", "matmul", "@"])
def test_sparse_dense_product_and_gradients(spell):
    dense = rng.standard_normal((3, 4)).astype(np.float32)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    results = []
    for T in (torch, scriptc):
        values = T.tensor(VALUES, requires_grad=True)
        d = T.tensor(dense, requires_grad=True)
        s = T.sparse_coo_tensor(T.tensor(INDICES), values, (3, 3))
        out = {"spmm": lambda: T.spmm(s, d), "sparse.mm": lambda: T.sparse.mm(s, d), "mm": lambda: T.mm(s, d),
               "matmul": lambda: T.matmul(s, d), "@": lambda: s @ d}[spell]()
        assert not out.is_sparse
        (out * T.tensor(weight)).sum().backward()
        results.append((out, d.grad, values.grad))
    for expected, actual in zip(*results):
        _close(expected, actual)


def test_gradient_through_to_sparse_keeps_the_pattern():
    x = np.array([[0.0, 1.5], [2.0, 0.0]], dtype=np.float32)
    grads = []
    for T in (torch, scriptc):
        leaf = T.tensor(x, requires_grad=True)
        T.sparse.mm(leaf.to_sparse(), T.ones(2, 3)).sum().backward()
        grads.append(leaf.grad)
    _close(grads[0], grads[1])


def test_sparse_sum_and_sparse_products():
    eye = np.eye(3, dtype=np.float32) * 2
    t, s = _both(lambda T: T.sparse.sum(T.tensor(eye).to_sparse()))
    _close(t, s)
    t, s = _both(lambda T: T.sparse.sum(T.tensor(eye).to_sparse(), dim=0))
    assert s.is_sparse
    _close(t.to_dense(), s.to_dense())
    t, s = _both(lambda T: T.tensor(eye).to_sparse() @ T.tensor(eye).to_sparse())
    assert s.is_sparse
    _close(t.to_dense(), s.to_dense())





def test_out_of_range_index_is_an_error():
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size is 2 but found index 2"):
        scriptc.sparse_coo_tensor(scriptc.tensor([[0, 1], [1, 2]]), scriptc.ones(2), (2, 2))


def _load_cora_adjacency(T, features, edges):
    """gcn/main.py load_cora's tensor processing, verbatim apart from reading files (and FloatTensor)."""
    features = T.tensor(features, dtype=T.float32)
    scale_vector = T.sum(features, dim=1)
    scale_vector = 1 / scale_vector
    scale_vector[scale_vector == float("inf")] = 0
    scale_vector = T.diag(scale_vector).to_sparse()
    features = scale_vector @ features
    V = features.shape[0]
    E = edges.shape[0]
    adj_mat = T.sparse_coo_tensor(edges.T, T.ones(E), (V, V), dtype=T.int64)
    adj_mat = T.eye(V) + adj_mat
    degree_mat = T.sum(adj_mat, dim=1)
    degree_mat = T.sqrt(1 / degree_mat)
    degree_mat[degree_mat == float("inf")] = 0
    degree_mat = T.diag(degree_mat).to_sparse()
    adj_mat = degree_mat @ adj_mat @ degree_mat
    return features.to_sparse(), adj_mat.to_sparse()


def test_gcn_load_cora_preprocessing():
    features = (rng.random((6, 5)) < 0.5).astype(np.int32)
    features[3] = 0  # a node without features: its scale is inf, then 0
    edges = np.array([[0, 1], [1, 2], [2, 0], [4, 5], [1, 2]], dtype=np.int32)
    (tf, ta), (sf, sa) = (_load_cora_adjacency(torch, features, edges),
                          _load_cora_adjacency(scriptc, features, edges))
    assert sf.is_sparse and sa.is_sparse
    _close(tf.to_dense(), sf.to_dense())
    _close(ta.to_dense(), sa.to_dense())
    np.testing.assert_array_equal(sa.indices().numpy(), ta.indices().numpy())


def _patterned(*shape, share_pattern=False):
    """A random array with about 40% zeros, one all-zero line, and the same zeros in every batch if asked."""
    x = rng.standard_normal(shape)
    zeros = rng.random(shape[-2:] if share_pattern else shape) < 0.4
    x[..., zeros] = 0
    x[..., 1, :] = 0
    return x


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_over_stored_elements_and_its_gradient(name, dim):
    x, weights = _patterned(4, 5), rng.standard_normal((4, 5))
    results = {}
    for T in (torch, scriptc):
        leaf = T.tensor(x, requires_grad=True)
        out = getattr(T.sparse, name)(leaf.to_sparse(), dim)
        (out.to_dense() * T.tensor(weights)).sum().backward()
        results[T] = out, leaf.grad
    (t_out, t_grad), (s_out, s_grad) = results[torch], results[scriptc]
    assert s_out.is_sparse
    np.testing.assert_array_equal(s_out.indices().numpy(), t_out.indices().numpy())
    _close(t_out.to_dense(), s_out.to_dense())
    _close(t_grad, s_grad)
    # dim=-1 is dim=1 (torch 2.13's sparse softmax backward does not wrap a negative dim: its gradient differs)
    leaf = scriptc.tensor(x, requires_grad=True)
    (getattr(scriptc.sparse, name)(leaf.to_sparse(), dim - 2).to_dense() * scriptc.tensor(weights)).sum().backward()
    _close(s_grad, leaf.grad)


def test_sparse_softmax_of_a_hybrid_tensor_and_dtype():
    h = rng.standard_normal((3, 4, 2))
    h[1] = 0
    for dim in (0, 2):
        t, s = _both(lambda T: T.sparse.softmax(T.tensor(h).to_sparse(1), dim))
        _close(t.to_dense(), s.to_dense())
    t, s = _both(lambda T: T.sparse.log_softmax(T.tensor(h, dtype=T.float32).to_sparse(), -1, dtype=T.float64))
    assert s.dtype is scriptc.float64
    _close(t.to_dense(), s.to_dense())


def test_sparse_addmm_is_addmm_with_a_sparse_mat1():
    mat, x, d = rng.standard_normal((4, 2)), _patterned(4, 5), rng.standard_normal((5, 2))
    t, s = _both(lambda T: T.sparse.addmm(T.tensor(mat), T.tensor(x).to_sparse(), T.tensor(d), beta=2, alpha=0.5))
    assert not s.is_sparse
    _close(t, s)


@pytest.mark.parametrize("shape", [(4, 5), (2, 4, 5)])
def test_sampled_addmm_at_the_input_pattern_and_its_gradients(shape):
    # torch takes a CSR input (every batch with the same number of stored elements); scriptc's is COO.
    x = _patterned(*shape, share_pattern=True)
    m1, m2 = rng.standard_normal(shape[:-1] + (3,)), rng.standard_normal(shape[:-2] + (3, shape[-1]))
    results = {}
    for T in (torch, scriptc):
        a, b = T.tensor(m1, requires_grad=True), T.tensor(m2, requires_grad=True)
        source = T.tensor(x).to_sparse_csr() if T is torch else T.tensor(x).to_sparse()
        out = T.sparse.sampled_addmm(source, a, b, beta=0.5, alpha=2)
        if len(shape) == 2:  # torch's backward takes no batched CSR
            out.to_dense().pow(2).sum().backward()
        results[T] = out.to_dense(), a.grad, b.grad
    for expected, actual in zip(results[torch], results[scriptc]):
        if expected is not None:
            _close(expected, actual)


@pytest.mark.parametrize("mat1, mat2, message", [
    ((3, 2), (3, 3), r"mat1 and mat2 shapes cannot be multiplied \(3x2 and 3x3\)"),
    ((2, 2), (2, 3), r"self.shape\[-2\] must match mat1.shape\[-2\]"),
    ((3, 2), (2, 4), r"self.shape\[-1\] must match mat2.shape\[-1\]"),
    ((3,), (2, 3), "Expected mat1 to be a matrix, got 1-D tensor"),
])
def test_sampled_addmm_errors_match_torch(mat1, mat2, message):
    for T in (torch, scriptc):
        source = T.eye(3).to_sparse_csr() if T is torch else T.eye(3).to_sparse()
        with pytest.raises(RuntimeError, match="sampled_addmm: " + message):
            T.sparse.sampled_addmm(source, T.ones(*mat1), T.ones(*mat2))
    with pytest.raises(NotImplementedError, match="sparse_sampled_addmm"):
        scriptc.sparse.sampled_addmm(scriptc.eye(3), scriptc.ones(3, 2), scriptc.ones(2, 3))


@pytest.mark.parametrize("offsets, shape", [([0, -1, 2], (4, 4)), ([0, -1, 2], (3, 5)), ([1, -2, 0], (5, 4)),
                                            ([0, 1, 3], (3, 3))])
def test_spdiags_matches_torch(offsets, shape):
    diagonals = np.arange(1.0, 13).reshape(3, 4)
    t, s = _both(lambda T: T.sparse.spdiags(T.tensor(diagonals), T.tensor(offsets), shape))
    assert s.is_sparse and not s.is_coalesced()
    np.testing.assert_array_equal(s._indices().numpy(), t._indices().numpy())
    np.testing.assert_array_equal(s._values().numpy(), t._values().numpy())
    t, s = _both(lambda T: T.sparse.spdiags(T.tensor(diagonals[0]), T.tensor(0), (3, 3)))
    _close(t.to_dense(), s.to_dense())
