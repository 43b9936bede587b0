"""The LDL factorization of symmetric (or Hermitian) matrices: linalg.ldl_factor(_ex) and ldl_solve.

The factorization is LAPACK's unblocked sytf2/hetf2 with Bunch-Kaufman pivoting over the lower
triangle, so LD and the pivots are what PyTorch returns: L below the diagonal and D's 1x1 and 2x2
blocks on it, pivots 1-based with a 2x2 block's two entries both -p (p the row swapped with its
second row). Each matrix of a batch pivots on its own, so the batch is a loop of column loops.
Neither op has a derivative in PyTorch; here neither records one.
"""

from __future__ import annotations

import math

from scriptc.types import int32

from . import register
from .linalg_solve import batch_prefix, first_failure, known_dims
from .matrix import conj, out_type, require_floating, require_matrix, same_dtype, torch_name
from .rules import broadcast_shapes
from .schema import OPAQUE
from .special import quiet_float_errors

# Bunch-Kaufman's threshold, (1 + sqrt(17)) / 8: it bounds element growth the same as partial pivoting.
ALPHA = (1 + math.sqrt(17)) / 8


def _magnitudes(xp, x):
    """LAPACK's |re| + |im| for complex entries (izamax, cabs1), |x| for real ones."""
    return xp.abs(x.real) + xp.abs(x.imag) if x.dtype.kind == "c" else xp.abs(x)


def _full_matrix(xp, a, hermitian: bool):
    """The symmetric (or Hermitian) matrix sytrf reads: a's lower triangle mirrored above it."""
    below = xp.tril(a, -1)
    mirrored = xp.tril(a) + (conj(below) if hermitian else below).T
    if hermitian:
        xp.fill_diagonal(mirrored, mirrored.diagonal().real)
    return mirrored


def _swap(a, k: int, i: int, j: int) -> None:
    """Interchange rows and columns i and j of the trailing block a[k:, k:]."""
    a[[i, j], k:] = a[[j, i], k:]
    a[k:, [i, j]] = a[k:, [j, i]]


def _choose_pivot(xp, a, k: int, hermitian: bool):
    """(pivot row, block size, zero pivot) of sytf2's Bunch-Kaufman test at column k (0-based)."""
    n = a.shape[0]
    diagonal = (lambda v: abs(v.real)) if hermitian else (lambda v: float(_magnitudes(xp, xp.asarray(v))))
    absakk = diagonal(a[k, k])
    column = _magnitudes(xp, a[k + 1:, k])
    imax = k + 1 + int(xp.argmax(column)) if k < n - 1 else k
    colmax = float(column.max()) if k < n - 1 else 0.0
    if max(absakk, colmax) == 0 or math.isnan(absakk):
        return k, 1, True
    if absakk >= ALPHA * colmax:
        return k, 1, False
    rowmax = float(_magnitudes(xp, a[imax, k:imax]).max())
    if imax < n - 1:
        rowmax = max(rowmax, float(_magnitudes(xp, a[imax + 1:, imax]).max()))
    if absakk >= ALPHA * colmax * (colmax / rowmax):
        return k, 1, False
    if diagonal(a[imax, imax]) >= ALPHA * rowmax:
        return imax, 1, False
    return imax, 2, False


def _eliminate_one(xp, a, k: int, hermitian: bool) -> None:
    """The rank-1 update of a 1x1 pivot: the trailing block loses x d^-1 x^H, column k becomes L."""
    x = a[k + 1:, k].copy()
    inverse = 1 / (a[k, k].real if hermitian else a[k, k])
    a[k + 1:, k + 1:] -= xp.multiply.outer(x, conj(x * inverse) if hermitian else x * inverse)
    a[k + 1:, k] = x * inverse


def _eliminate_two(xp, a, k: int, hermitian: bool) -> None:
    """The rank-2 update of a 2x2 pivot, in sytf2's (hetf2's) arithmetic: W = X D^-1, columns k, k+1 become W."""
    xk, xk1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
    if hermitian:
        scale = abs(a[k + 1, k])
        d11, d22 = a[k + 1, k + 1].real / scale, a[k, k].real / scale
        d21 = a[k + 1, k] / scale
        factor = (1 / (d11 * d22 - 1)) / scale
        wk = factor * (d11 * xk - d21 * xk1)
        wk1 = factor * (d22 * xk1 - conj(d21) * xk)
        a[k + 2:, k + 2:] -= xp.multiply.outer(xk, conj(wk)) + xp.multiply.outer(xk1, conj(wk1))
    else:
        d21 = a[k + 1, k]
        d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
        factor = (1 / (d11 * d22 - 1)) / d21
        wk = factor * (d11 * xk - xk1)
        wk1 = factor * (d22 * xk1 - xk)
        a[k + 2:, k + 2:] -= xp.multiply.outer(xk, wk) + xp.multiply.outer(xk1, wk1)
    a[k + 2:, k], a[k + 2:, k + 1] = wk, wk1


def ldl_factor_matrix(xp, a, hermitian: bool):
    """(LD, pivots, info) of one n x n matrix: sytf2 over its lower triangle."""
    n = a.shape[0]
    a = _full_matrix(xp, a, hermitian)
    pivots = xp.zeros(n, dtype=xp.int32)
    info, k = 0, 0
    while k < n:
        pivot, step, zero = _choose_pivot(xp, a, k, hermitian)
        if zero and info == 0:
            info = k + 1
        last = k + step - 1
        if pivot != last:
            _swap(a, k, last, pivot)
        if not zero:
            (_eliminate_one if step == 1 else _eliminate_two)(xp, a, k, hermitian)
        pivots[k:k + step] = pivot + 1 if step == 1 else -(pivot + 1)
        k += step
    ld = xp.tril(a)
    if hermitian and ld.dtype.kind == "c":
        xp.fill_diagonal(ld, ld.diagonal().real)
    return ld, pivots, info


def ldl_solve_matrix(xp, ld, pivots, b, hermitian: bool):
    """A^-1 b for A = P L D L^H P^H given by sytrf (one matrix, b of shape (n, k)): sytrs."""
    n = ld.shape[0]
    cj = conj if hermitian else (lambda v: v)
    x = b.copy()
    k = 0
    while k < n:  # L D y = P^T b, eliminating forwards
        if pivots[k] > 0:
            p = int(pivots[k]) - 1
            x[[k, p]] = x[[p, k]]
            x[k + 1:] -= xp.multiply.outer(ld[k + 1:, k], x[k])
            x[k] /= ld[k, k].real if hermitian else ld[k, k]
            k += 1
            continue
        p = -int(pivots[k]) - 1
        x[[k + 1, p]] = x[[p, k + 1]]
        x[k + 2:] -= xp.multiply.outer(ld[k + 2:, k], x[k]) + xp.multiply.outer(ld[k + 2:, k + 1], x[k + 1])
        off = ld[k + 1, k]
        akm1, ak = ld[k, k] / cj(off), ld[k + 1, k + 1] / off
        denominator = akm1 * ak - 1
        bkm1, bk = x[k] / cj(off), x[k + 1] / off
        x[k], x[k + 1] = (ak * bkm1 - bk) / denominator, (akm1 * bk - bkm1) / denominator
        k += 2
    k = n - 1
    while k >= 0:  # L^H P^T x = y, backwards
        step = 1 if pivots[k] > 0 else 2
        for column in range(k, k - step, -1):
            x[column] -= cj(ld[k + 1:, column]) @ x[k + 1:]
        p = abs(int(pivots[k])) - 1
        x[[k, p]] = x[[p, k]]
        k -= step
    return x


def _factor_kernel(name: str, ex: bool):
    def kernel(xp, a, hermitian=False, check_errors=False):
        checked = "torch.linalg.ldl_factor_ex"  # ldl_factor calls it in PyTorch, its checks name it
        require_matrix(a, checked)
        require_floating(a, checked)
        require_matrix(a, checked, square=True)
        batch, n = a.shape[:-2], a.shape[-1]
        flat = a.reshape((math.prod(batch), n, n))
        ld = xp.empty(flat.shape, dtype=a.dtype)
        pivots = xp.empty(flat.shape[:-1], dtype=xp.int32)
        info = xp.empty(flat.shape[0], dtype=xp.int32)
        with quiet_float_errors(xp):  # LAPACK's arithmetic: a singular trailing block gives inf, not a warning
            for i in range(flat.shape[0]):
                ld[i], pivots[i], info[i] = ldl_factor_matrix(xp, flat[i], hermitian and a.dtype.kind == "c")
        ld, pivots, info = ld.reshape(a.shape), pivots.reshape(batch + (n,)), info.reshape(batch)
        if (check_errors or not ex) and first_failure(info) is not None:
            bad = first_failure(info)
            raise RuntimeError(f"{name}: {batch_prefix(a, bad)}The factorization could not be completed because the input is "
                               f"singular (D[{int(info[bad])},{int(info[bad])}] is zero).")
        return (ld, pivots, info) if ex else (ld, pivots)
    return kernel


def _solve_kernel(xp, ld, pivots, b, hermitian=False):
    name = "torch.linalg.ldl_solve"
    require_matrix(ld, name)
    if b.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(b.ndim, 1)}, "
                         f"{max(b.ndim, 1) - 1}], but got -2)")
    require_matrix(ld, name, square=True)
    if pivots.shape != ld.shape[:-1]:
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots.shape)} instead")
    if pivots.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {torch_name(pivots.dtype)}")
    same_dtype("Expected b and A to have the same dtype, but found b of type {} and A of type {} instead.", b, ld)
    n = ld.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by {n} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    batch = broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    count = math.prod(batch)
    lds = xp.broadcast_to(ld, batch + ld.shape[-2:]).reshape((count, n, n))
    pivs = xp.broadcast_to(pivots, batch + (n,)).reshape((count, n))
    bs = xp.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
    x = xp.empty(bs.shape, dtype=b.dtype)
    with quiet_float_errors(xp):
        for i in range(bs.shape[0]):
            x[i] = ldl_solve_matrix(xp, lds[i], pivs[i], bs[i], hermitian and b.dtype.kind == "c")
    return x.reshape(batch + b.shape[-2:])


def _factor_rule(a, *flags):
    batch = None if a.shape is None else tuple(a.shape[:-2])
    pivots = None if not known_dims(a) else batch + (a.shape[-1],)
    return out_type(a, a.shape), out_type(a, pivots, int32)


def _factor_ex_rule(a, *flags):
    return _factor_rule(a) + (out_type(a, None if a.shape is None else tuple(a.shape[:-2]), int32),)


def _solve_rule(ld, pivots, b, *flags):
    if not (known_dims(ld) and known_dims(b)):
        return out_type(b, None)
    return out_type(b, broadcast_shapes(tuple(ld.shape[:-2]), tuple(b.shape[:-2])) + tuple(b.shape[-2:]))


register("linalg_ldl_factor(self: Tensor, *, hermitian: bool = False) -> (Tensor, Tensor)", OPAQUE,
         _factor_kernel("torch.linalg.ldl_factor", ex=False), shape=_factor_rule, complex_aware=True,
         result_names=("LD", "pivots"), method=False, function=False,
         doc="The LDL factorization of symmetric (hermitian=True: Hermitian) matrices with Bunch-Kaufman pivoting, "
             "packed as LAPACK's sytrf: L below the diagonal, D's 1x1 and 2x2 blocks on it, 1-based pivots.")
register("linalg_ldl_factor_ex(self: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> "
         "(Tensor, Tensor, Tensor)", OPAQUE, _factor_kernel("torch.linalg.ldl_factor_ex", ex=True),
         shape=_factor_ex_rule, complex_aware=True, result_names=("LD", "pivots", "info"), method=False,
         function=False, doc="linalg.ldl_factor that reports a zero pivot of D in `info` (its 1-based index) "
                             "instead of raising, unless check_errors=True.")
register("linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor", OPAQUE,
         _solve_kernel, shape=_solve_rule, complex_aware=True, method=False, function=False,
         doc="Solves A X = B from linalg.ldl_factor's (LD, pivots) of A.")
