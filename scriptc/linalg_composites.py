"""The torch.linalg functions scriptc composes from table ops (so autograd and tracing see through them):
cond, vander, solve_ex, tensorinv, tensorsolve, householder_product; ormqr (a product with that Q); and
torch's older solver spellings (triangular_solve, lu, lu_solve, orgqr)."""

from __future__ import annotations

import math

from scriptc.amp.policy import float32_under_autocast
from scriptc.errors import LinAlgError
from scriptc.ops.matrix import torch_name
from scriptc.return_types import result_type
from scriptc.tensors import Tensor

__all__ = ["cond", "vander", "solve_ex", "tensorinv", "tensorsolve", "householder_product", "ormqr",
           "triangular_solve", "lu", "lu_solve", "orgqr"]


# torch.return_types.linalg_solve_ex and .triangular_solve
_SOLVE_EX = result_type("linalg_solve_ex", ["result", "info"])
_TRIANGULAR_SOLVE = result_type("triangular_solve", ["solution", "cloned_coefficient"])


def _linalg():
    import scriptc
    return scriptc


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in norm p: sigma_max / sigma_min for p None or 2 (sigma_min / sigma_max
    for -2); ||A|| ||A^-1|| for 'fro', 'nuc', +-inf and +-1 (inf for singular matrices)."""
    torch = _linalg()
    if p is None or p in (2, -2):
        sigma = torch.linalg.svdvals(A)
        largest, smallest = sigma[..., 0], sigma[..., -1]
        return smallest / largest if p == -2 else largest / smallest
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.dim() > 1 else 1} by {A.shape[-1]} matrices")
    inverse, info = torch.linalg.inv_ex(A)
    value = torch.linalg.matrix_norm(A, p) * torch.linalg.matrix_norm(inverse, p)
    return torch.where(info > 0, torch.full_like(value, math.inf), value)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of x along its last dim: columns x^0, x^1, ..., x^(N-1)."""
    torch = _linalg()
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    columns = x.size(-1) if N is None else N
    if columns <= 1:
        raise RuntimeError("N must be greater than 1.")
    base = x if x.is_floating_point() or x.is_complex() else x.long()
    ones = torch.ones_like(base.unsqueeze(-1))
    return torch.cat([ones, base.unsqueeze(-1).expand(*base.shape, columns - 1).cumprod(-1)], dim=-1)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """(result, info): solve(A, B) without raising on a singular A unless check_errors; info is 0 per
    matrix, or i > 0 when U[i-1, i-1] of its LU factorisation is zero (the result is then inf/nan)."""
    torch = _linalg()
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    matrix = A if left else A.mT
    rhs = rhs if left else rhs.mT
    lu, pivots, info = torch.linalg.lu_factor_ex(matrix)
    if check_errors and bool((info > 0).any()):
        raise LinAlgError(_singular_message(info))
    result = torch.linalg.lu_solve(lu, pivots, rhs)
    result = result if left else result.mT
    return _SOLVE_EX(result.squeeze(-1) if vector else result, info)


def _singular_message(info: Tensor) -> str:
    if info.dim() == 0:
        return "torch.linalg.solve_ex: The solver failed because the input matrix is singular."
    index = int(info.flatten().ne(0).nonzero()[0].item())
    return f"torch.linalg.solve_ex: (Batch element {index}): The solver failed because the input matrix is singular."


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A seen as a matrix of prod(shape[:ind]) rows and prod(shape[ind:]) columns, shaped
    shape[ind:] + shape[:ind]."""
    torch = _linalg()
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, columns = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {columns} != {rows}")
    return torch.linalg.inv(A.reshape(rows, columns)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with tensordot(A, X, X.dim()) = B (A's dims listed in dims moved to the end first)."""
    torch = _linalg()
    if dims is not None:
        moved = [d % A.dim() for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in moved] + moved)
    result_shape = tuple(A.shape[B.dim():])
    rows, columns = B.numel(), math.prod(result_shape)
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {columns} != {rows}")
    return torch.linalg.solve(A.reshape(rows, columns), B.reshape(rows)).reshape(result_shape)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^H, with v_i column i of A below the
    diagonal and 1 on it (the Q of a QR factorisation in LAPACK's compact form)."""
    torch = _linalg()
    A, tau = float32_under_autocast(A, tau)  # torch's CPU autocast runs it in float32
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"torch.linalg.householder_product: Expected tau to have one dimension less than "
                           f"input, but got tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    below = torch.tril(A, -1) + torch.eye(m, n, dtype=A.dtype)
    q = torch.eye(m, dtype=A.dtype).expand(*A.shape[:-2], m, m)
    for i in range(k):
        v = below[..., :, i:i + 1]
        q = q - (q @ v) * tau[..., i:i + 1].unsqueeze(-1) @ v.transpose(-2, -1).conj()
    return q[..., :, :n]


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """Q @ other (other @ Q when left=False; Q^H when transpose) for the Q = H_1 ... H_k that torch.geqrf's
    (a, tau) describe, without forming it apart from its reflectors: the full m x m Q of an m-row input."""
    torch = _linalg()
    tau, other = input2, input3
    side = -2 if left else -1
    if input.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    m = input.shape[-2]
    if other.shape[side] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    k = tau.shape[-1] if tau.dim() else 1
    if k != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if other.dim() != input.dim():
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    for name, t in (("tau", tau), ("other", other)):
        if tuple(t.shape[:input.dim() - 2]) != tuple(input.shape[:-2]):
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {name} to be equal to input.shape[:-2], "
                               f"but got {list(t.shape[:input.dim() - 2])}")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype != input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{torch_name(input.dtype)} and {name} has dtype {torch_name(t.dtype)}")
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{torch_name(input.dtype)}'")
    # Q is householder_product of the reflectors padded with zero columns to m x m (their tau is 0: H = I).
    reflectors = input[..., :, :k]
    padding = torch.zeros(*input.shape[:-2], m, m - k, dtype=input.dtype)
    q = householder_product(torch.cat([reflectors, padding], dim=-1), tau)
    q = q.mH if transpose else q
    return q @ other if left else other @ q


# --- torch's deprecated spellings of these solvers (they warn as torch does) ---------------------------------

def _deprecated(message: str) -> None:
    import warnings

    warnings.warn(message, UserWarning, stacklevel=3)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Deprecated torch.triangular_solve: (X with op(A) X = b, a copy of A); op transposes when asked."""
    torch = _linalg()
    _deprecated("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                "removed in a future PyTorch release.")
    b, A = float32_under_autocast(b, A)  # torch's CPU autocast solves in float32
    matrix = A.mT if transpose else A
    solution = torch.linalg.solve_triangular(matrix, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TRIANGULAR_SOLVE(solution, A.clone())


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """Deprecated torch.lu: (LU, pivots) or (LU, pivots, infos) of linalg.lu_factor_ex."""
    torch = _linalg()
    _deprecated("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                "be removed in a future PyTorch release.")
    factors, pivots, infos = torch.linalg.lu_factor_ex(A, pivot=pivot)
    return (factors, pivots, infos) if get_infos else (factors, pivots)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Deprecated torch.lu_solve(b, LU, pivots): linalg.lu_solve(LU, pivots, b)."""
    torch = _linalg()
    _deprecated("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed in a future "
                "PyTorch release.")
    b, LU_data = float32_under_autocast(b, LU_data)  # torch's CPU autocast solves in float32
    return torch.linalg.lu_solve(LU_data, LU_pivots, b)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """torch.orgqr: linalg.householder_product."""
    return householder_product(input, tau)
