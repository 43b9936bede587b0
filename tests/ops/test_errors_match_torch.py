"""Bad input to the linear-algebra, fft, complex, sparse and placement (put, *_scatter, index_reduce) ops
raises torch's error type with torch's message
(checked against torch 2.13)."""

from __future__ import annotations

import pytest

import scriptc
from scriptc.errors import LinAlgError


torch = pytest.importorskip("torch")

# Each call is written once and run with `T` bound to torch and to scriptc.
CALLS = [
    "-(T.ones(2) > 0)",
    "T.neg(T.ones(2, dtype=T.bool))",
    "T.arange(3) ** -2",
    "T.dot(T.ones(2, 2), T.ones(2, 2))",
    "T.dot(T.ones(3), T.ones(4))",
    "T.dot(T.ones(3), T.ones(3, dtype=T.float64))",
    "T.vdot(T.ones(3), T.ones(4))",
    "T.mv(T.ones(2, 3), T.ones(4))",
    "T.mv(T.ones(2, 3), T.ones(3, 1))",
    "T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(4, 2))",
    "T.addmm(T.ones(2, 2, dtype=T.float64), T.ones(2, 3), T.ones(3, 2))",
    "T.addmm(T.ones(3, 3), T.ones(2, 3), T.ones(3, 2))",
    "T.addmm(T.ones(2, 2), T.ones(3), T.ones(3, 2))",
    "T.addmv(T.ones(2, dtype=T.float64), T.ones(2, 3), T.ones(3))",
    "T.addr(T.ones(2, 3), T.ones(2), T.ones(3, 1))",
    "T.baddbmm(T.ones(2, 2), T.ones(2, 2, 3), T.ones(3, 3, 2))",
    "T.baddbmm(T.ones(2, 2, 2, dtype=T.float64), T.ones(2, 2, 3), T.ones(2, 3, 2))",
    "T.addbmm(T.ones(2, 2), T.ones(2, 3), T.ones(2, 3, 2))",
    "T.outer(T.ones(2, 2), T.ones(3))",
    "T.inner(T.ones(2, 3), T.ones(4, 2))",
    "T.tensordot(T.ones(2, 3), T.ones(4, 5), dims=1)",
    "T.tensordot(T.ones(2, 3), T.ones(3, 5), dims=-1)",
    "T.tensordot(T.ones(2, 3), T.ones(3, 5), dims=([1], [0, 1]))",
    "T.cross(T.ones(2, 3), T.ones(2, 3), dim=0)",
    # lerp compares dtypes before it refuses a non-floating one, in C++'s names of them
    "T.lerp(T.ones(2, dtype=T.bool), T.ones(2, dtype=T.int32), 0.5)",
    "T.lerp(T.ones(2, dtype=T.int64), T.ones(2), 0.5)",
    "T.lerp(T.ones(2), T.ones(2), T.ones(2, dtype=T.int64))",
    "T.lerp(T.ones(2, dtype=T.float16), T.ones(2), 0.5)",
    "T.lerp(T.ones(2, dtype=T.int32), T.ones(2, dtype=T.int32), 0.5)",
    "T.linalg.cross(T.ones(2, 4), T.ones(2, 4))",
    "T.diag(T.ones(2, 2, 2))",
    "T.trace(T.ones(2, 2, 2))",
    "T.trace(T.ones(2, 3, dtype=T.bool))",
    "T.diagonal(T.ones(2, 3), 0, 0, 0)",
    "T.diagonal(T.ones(2, 3), 0, 0, 2)",
    "T.linalg.multi_dot([T.ones(2, 3)])",
    "T.linalg.multi_dot([T.ones(2, 3), T.ones(4, 2)])",
    "T.linalg.multi_dot([T.ones(2, 3, 2), T.ones(2, 2)])",
    "T.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64))",
    "T.einsum('ij,jk', T.ones(2, 3))",
    "T.einsum('ij,jk', T.ones(2, 3), T.ones(3, 2), T.ones(2))",
    "T.einsum('ij', T.ones(2, 3, 4))",
    "T.einsum('i1', T.ones(2, 3))",
    "T.einsum('ij->ii', T.ones(2, 3))",
    "T.einsum('ij->k', T.ones(2, 3))",
    "T.einsum('ij,ij->ij', T.ones(2, 3), T.ones(3, 3))",
    "T.einsum('ii', T.ones(2, 3))",
    "T.einsum('...ij,...jk', T.ones(2, 2, 3), T.ones(3, 3, 2))",
    "T.einsum('ij,jk->i.k', T.ones(2, 3), T.ones(3, 2))",
    "T.einsum('i,i', T.ones(3), T.ones(3, dtype=T.float64))",
    "T.norm(T.ones(2, 3, dtype=T.int64))",
    "T.linalg.vector_norm(T.ones(2, 3), 2, dim=(0, 0))",
    "T.linalg.vector_norm(T.ones(0, 3), float('inf'))",
    "T.linalg.vector_norm(T.ones(0, 3), float('inf'), dim=0)",
    "T.linalg.vector_norm(T.ones(2, 3, dtype=T.float64), 2, dtype=T.float32)",
    "T.linalg.matrix_norm(T.ones(3), 'fro')",
    "T.linalg.matrix_norm(T.ones(2, 3), 'abc')",
    "T.linalg.matrix_norm(T.ones(2, 3), 3)",
    "T.linalg.matrix_norm(T.ones(2, 3), 'fro', dim=(0, 0))",
    "T.linalg.norm(T.ones(2, 3, 4), 2)",
    "T.linalg.norm(T.ones(2, 3), 'fro', dim=1)",
    "T.norm(T.ones(2, 3, 4), 'nuc')",
    "T.dist(T.ones(2, 3, dtype=T.int64), T.ones(3, dtype=T.int64))",
    "T.cdist(T.ones(5, 2, 3), T.ones(4, 4, 3))",
    "T.cdist(T.ones(2, 3), T.ones(4, 2))",
    "T.cdist(T.ones(3), T.ones(4, 3))",
    "T.cdist(T.ones(2, 3), T.ones(4, 3), -1)",
    "T.cdist(T.ones(2, 3, dtype=T.int64), T.ones(4, 3, dtype=T.int64))",
    "T.cdist(T.ones(2, 3), T.ones(4, 3, dtype=T.float64))",
    "T.nn.functional.normalize(T.ones(2, 3, dtype=T.int64))",
    "T.linalg.inv(T.ones(3, 3))",
    "T.linalg.inv(T.stack([T.eye(3), T.ones(3, 3)]))",
    "T.linalg.inv(T.ones(2, 3))",
    "T.linalg.inv(T.ones(3))",
    "T.linalg.inv(T.ones(3, 3, dtype=T.int64))",
    "T.inverse(T.ones(3, 3))",
    "T.linalg.solve(T.ones(3, 3), T.ones(3))",
    "T.linalg.solve(T.stack([T.eye(3), T.ones(3, 3)]), T.ones(3))",
    "T.linalg.solve(T.eye(3), T.ones(4))",
    "T.linalg.solve(T.eye(3), T.ones(3, 2), left=False)",
    "T.linalg.solve(T.eye(3), T.ones(3, dtype=T.float64))",
    "T.linalg.det(T.ones(2, 3))",
    "T.det(T.ones(3, 3, dtype=T.int64))",
    "T.linalg.cholesky(T.ones(3, 3))",
    "T.linalg.cholesky(T.stack([T.eye(3), -T.eye(3)]))",
    "T.linalg.cholesky(T.ones(3, 2))",
    "T.linalg.qr(T.ones(3, 2), mode='bad')",
    "T.linalg.eigh(T.ones(3, 2))",
    "T.linalg.eigh(T.ones(3, 3), UPLO='X')",
    "T.linalg.eigvalsh(T.ones(3, 3, dtype=T.int64))",
    "T.linalg.svd(T.ones(3), full_matrices=False)",
    "T.linalg.pinv(T.ones(3, 2), hermitian=True)",
    "T.linalg.lstsq(T.ones(3, 2), T.ones(4, 1))",
    "T.linalg.lstsq(T.ones(3, 2), T.ones(3, 1), driver='bad')",
    "T.linalg.lstsq(T.ones(3, 2, dtype=T.float64), T.ones(3, 1))",
    "T.linalg.lu_factor(T.ones(3, 3))",
    "T.linalg.lu_factor(T.stack([T.eye(3), T.ones(3, 3)]))",
    "T.linalg.matrix_power(T.ones(2, 3), 2)",
    "T.linalg.ldl_factor(T.ones(3, 4))",
    "T.sparse.softmax(T.ones(3, 3).to_sparse(), 2)",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([0, 0, 1]), (3, 3))",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([0, 1]), (3, 3))",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([[0, 1, 2]]), (3, 3))",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([0.0, 1, 2]), (3, 3))",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([0, 1, 2]), (3, 3, 3))",
    "T.sparse.spdiags(T.ones(3, 3), T.tensor([0, 1, 2]), (3, 3), layout=T.strided)",
    "T.sparse.spdiags(T.ones(3, 3), [0, 1, 2], (3, 3))",
    "T.linalg.ldl_factor(T.ones(3))",
    "T.linalg.ldl_factor_ex(T.ones(3, 3, dtype=T.int64))",
    "T.linalg.ldl_solve(T.eye(3), T.ones(3, dtype=T.int32), T.ones(4, 2))",
    "T.linalg.ldl_solve(T.eye(3), T.ones(3, dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.ldl_solve(T.eye(3), T.ones(3), T.ones(3, 2))",
    "T.linalg.ldl_solve(T.eye(3), T.ones(2, dtype=T.int32), T.ones(3, 2))",
    "T.linalg.ldl_solve(T.eye(3), T.ones(3, dtype=T.int32), T.ones(3))",
    "T.linalg.ldl_solve(T.ones(3, 4), T.ones(3, dtype=T.int32), T.ones(3, 2))",
    "T.linalg.matrix_power(T.eye(2), 2.5)",
    "T.linalg.matrix_power(T.ones(2, 2, dtype=T.int64), -1)",
    "T.fft.rfft(T.ones(4, dtype=T.complex64))",
    "T.fft.ihfft(T.ones(4, dtype=T.complex64))",
    "T.fft.fft(T.ones(4), n=0)",
    "T.fft.fft(T.ones(0))",
    "T.fft.fft(T.ones(4), norm='bad')",
    "T.fft.fft(T.ones(4), dim=2)",
    "T.fft.fft(T.tensor(1.0))",
    "T.fft.fft2(T.ones(4))",
    "T.fft.fftn(T.ones(2, 3, 4), s=(2, 2), dim=(0,))",
    "T.view_as_real(T.ones(2))",
    "T.view_as_complex(T.ones(2, 3))",
    "T.view_as_complex(T.ones(2, 2, dtype=T.int64))",
    "T.view_as_complex(T.ones(2, 2).t())",
    "T.ones(2).imag",
    "T.complex(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))",
    "T.complex(T.ones(2), T.ones(2, dtype=T.float64))",
    "T.polar(T.ones(2), T.ones(2, dtype=T.float64))",
    "T.tensor([1+1j], requires_grad=True).sum().backward()",
    "T.sparse_coo_tensor(T.tensor([0, 1]), T.ones(2), (2, 2))",
    "T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.ones(3), (2, 2))",
    "T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.ones(2), (2,))",
    "T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.ones(2, 3), (2, 2))",
    "T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.ones(2)).indices()",
    "T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.ones(2)).values()",
    "T.ones(2, 2).indices()",
    "T.ones(2, 2).values()",
    "T.ones(2, 2).coalesce()",
    "T.eye(3).to_sparse() + T.ones(3, 3)",
    "T.linalg.solve_triangular(T.eye(3), T.ones(3), upper=True)",
    "T.linalg.solve_triangular(T.ones(2, 3), T.ones(3, 2), upper=True)",
    "T.linalg.solve_triangular(T.eye(3), T.ones(3, 2), upper=True, left=False)",
    "T.linalg.solve_triangular(T.eye(3, dtype=T.int64), T.ones(3, 2, dtype=T.int64), upper=True)",
    "T.ones(3).float_power_(2)",
    "T.ones(3, dtype=T.int64).float_power_(T.ones(3))",
    "T.zeros(3, 4).index_reduce(0, T.tensor([0, 2]), T.ones(2, 4), 'sum')",
    "T.zeros(3, 4).index_reduce(0, T.tensor([0, 5]), T.ones(2, 4), 'prod')",
    "T.zeros(3, 4).index_reduce(0, T.tensor([0, 2]), T.ones(3, 4), 'prod')",
    "T.zeros(3, 4).index_reduce(0, T.tensor([0.0, 2.0]), T.ones(2, 4), 'prod')",
    "T.zeros(3, 4).put(T.tensor([0, 20]), T.ones(2))",
    "T.zeros(3, 4).put(T.tensor([0, -13]), T.ones(2))",
    "T.zeros(3, 4).put_(T.tensor([0, 1]), T.ones(3))",
    "T.zeros(3, 4).put(T.tensor([0.0, 1.0]), T.ones(2))",
    "T.select_scatter(T.zeros(3, 4), T.ones(4), 0, 5)",
    "T.select_scatter(T.zeros(3, 4), T.ones(3), 0, 1)",
    "T.select_scatter(T.zeros(3, 4), T.ones(4), 2, 1)",
    "T.slice_scatter(T.zeros(3, 4), T.ones(3, 3), 1, 0, 4, 2)",
    "T.slice_scatter(T.zeros(3, 4), T.ones(3, 2), 1, 0, 4, 0)",
    "T.diagonal_scatter(T.zeros(3, 4), T.ones(4), 1)",
    "T.diagonal_scatter(T.zeros(3, 4), T.ones(3), 0, 0, 0)",
]


def _outcome(lib, code: str):
    """The exception `code` raises with `T` bound to lib (None when it raises nothing)."""
    try:
        eval(code, {"T": lib})
    except Exception as exc:  # the point is to compare whatever each library raises
        return exc
    return None


def _expected_type(torch_exc):
    if isinstance(torch_exc, torch.linalg.LinAlgError):
        return LinAlgError
    for kind in (NotImplementedError, IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(torch_exc, kind):
            return kind
    raise AssertionError(f"unexpected torch error {type(torch_exc)}")


@pytest.mark.parametrize("code", CALLS)
def test_error_matches_torch(code):
    expected = _outcome(torch, code)
    assert expected is not None, f"torch accepts {code}"
    actual = _outcome(scriptc, code)
    assert actual is not None, f"scriptc accepts {code}"
    assert isinstance(actual, _expected_type(expected)), f"{code}: {type(actual).__name__}: {actual}"
    assert str(actual).split("\n")[0].replace("scriptc.", "torch.") == str(expected).split("\n")[0]
