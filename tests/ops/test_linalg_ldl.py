"""linalg.ldl_factor(_ex) and ldl_solve against torch 2.13: Bunch-Kaufman pivots exactly as LAPACK's
sytrf returns them, symmetric and Hermitian complex inputs, zero pivots reported in `info`."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _random_matrices(rng, count: int, n: int, complex_: bool, dtype):
    a = rng.standard_normal((count, n, n))
    if complex_:
        a = a + 1j * rng.standard_normal((count, n, n))
    a[0, 0, 0] = 0  # forces a pivot search (a 2x2 block or an interchange) on the first column
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
@pytest.mark.parametrize("hermitian", [False, True])
def test_factor_and_solve_match_torch(dtype, hermitian):
    rng = np.random.default_rng(7)
    complex_ = np.dtype(dtype).kind == "c"
    for n in (1, 2, 5, 8):
        a = _random_matrices(rng, 4, n, complex_, dtype)
        expected = torch.linalg.ldl_factor_ex(torch.from_numpy(a), hermitian=hermitian)
        actual = scriptc.linalg.ldl_factor_ex(scriptc.tensor(a), hermitian=hermitian)
        np.testing.assert_array_equal(actual.pivots.numpy(), expected.pivots.numpy())
        np.testing.assert_array_equal(actual.info.numpy(), expected.info.numpy())
        tolerance = 1e-10 if dtype in (np.float64, np.complex128) else 2e-3
        np.testing.assert_allclose(actual.LD.numpy(), expected.LD.numpy(), rtol=tolerance, atol=tolerance)
        b = rng.standard_normal((4, n, 3)).astype(dtype)
        solved = scriptc.linalg.ldl_solve(actual.LD, actual.pivots, scriptc.tensor(b), hermitian=hermitian)
        reference = torch.linalg.ldl_solve(expected.LD, expected.pivots, torch.from_numpy(b), hermitian=hermitian)
        np.testing.assert_allclose(solved.numpy(), reference.numpy(), rtol=tolerance * 10, atol=tolerance * 10)


def test_solve_inverts_the_matrix_it_factored():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 6))
    a = a + a.T
    ld, pivots = scriptc.linalg.ldl_factor(scriptc.tensor(a))
    b = rng.standard_normal((6, 2))
    x = scriptc.linalg.ldl_solve(ld, pivots, scriptc.tensor(b))
    np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-10)


def test_zero_pivot_goes_to_info_or_raises():
    a = np.zeros((2, 3, 3))
    a[0] = np.eye(3)
    result = scriptc.linalg.ldl_factor_ex(scriptc.tensor(a))
    expected = torch.linalg.ldl_factor_ex(torch.from_numpy(a))
    np.testing.assert_array_equal(result.info.numpy(), expected.info.numpy())
    np.testing.assert_array_equal(result.pivots.numpy(), expected.pivots.numpy())
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\).*singular"):
        scriptc.linalg.ldl_factor(scriptc.tensor(a))
    with pytest.raises(RuntimeError, match="singular"):
        scriptc.linalg.ldl_factor_ex(scriptc.tensor(a), check_errors=True)


def test_empty_and_broadcast_shapes():
    ld, pivots = scriptc.linalg.ldl_factor(scriptc.zeros(2, 0, 0))
    assert tuple(ld.shape) == (2, 0, 0) and tuple(pivots.shape) == (2, 0) and pivots.dtype == scriptc.int32
    eye = scriptc.eye(3)
    solved = scriptc.linalg.ldl_solve(eye, scriptc.tensor([1, 2, 3], dtype=scriptc.int32), scriptc.ones(2, 3, 2))
    assert tuple(solved.shape) == (2, 3, 2)


def test_no_gradient_is_recorded():
    x = scriptc.eye(3, requires_grad=True)
    ld, pivots = scriptc.linalg.ldl_factor(x)
    assert not ld.requires_grad and pivots.dtype == scriptc.int32
