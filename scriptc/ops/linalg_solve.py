"""Linear systems: LU (factor, unpack, solve), inv, solve, det, slogdet and matrix_power.

The LU factorization is LAPACK's getrf (partial pivoting, the first largest pivot), written over
batches with numpy, so pivots and the index of a zero pivot (PyTorch's error messages) agree with
PyTorch's. Gradients are PyTorch's formulas, in its conjugate Wirtinger convention for complex inputs.
"""

from __future__ import annotations

from scriptc.errors import LinAlgError, ShapeError
from scriptc.types import int32

from . import register
from .matrix import conj, mH, mT, out_type, require_floating, require_matrix, same_dtype, shape_rule
from .rules import broadcast_shapes
from .schema import OPAQUE
from .special import quiet_float_errors


def batch_prefix(x, index) -> str:
    """'(Batch element i): ' for a batched input, as PyTorch words errors of one matrix in a batch."""
    if x.ndim <= 2:
        return ""
    flat = 0
    for i, size in zip(index, x.shape[:-2]):
        flat = flat * size + i
    return f"(Batch element {flat}): "


def first_failure(info):
    """The batch index (a tuple) of the first nonzero entry of info, or None."""
    flat = next((i for i, v in enumerate(info.reshape(-1).tolist()) if v), None)
    if flat is None:
        return None
    index = []
    for size in reversed(info.shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


# --- LU --------------------------------------------------------------------------------

def lu_factor(xp, a):
    """(LU, pivots, info) of a (..., m, n): getrf's packed L\\U, 1-based int32 row swaps, and per
    matrix the 1-based index of the first zero pivot (0 when none)."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    lu = xp.array(a.reshape((-1, m, n)), dtype=a.dtype, copy=True)
    count, k = lu.shape[0], min(m, n)
    pivots = xp.zeros((count, k), dtype=xp.int32)
    info = xp.zeros(count, dtype=xp.int32)
    rows = xp.arange(count)
    for j in range(k):
        p = j + xp.argmax(xp.abs(lu[:, j:, j]), axis=1)
        pivots[:, j] = p + 1
        row_j = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = row_j
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1:, j] /= xp.where(zero, 1, pivot)[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch)


def permutation(xp, pivots, m):
    """perm such that A[..., perm, :] = L @ U, from getrf's 1-based row swaps."""
    flat = pivots.reshape(-1, pivots.shape[-1]) - 1
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        target = flat[:, j]
        held = perm[rows, j].copy()
        perm[rows, j] = perm[rows, target]
        perm[rows, target] = held
    return perm.reshape(pivots.shape[:-1] + (m,))


def lu_unpack(xp, lu, pivots):
    """(P, L, U) with A = P @ L @ U."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    eye = xp.eye(m, k, dtype=lu.dtype)
    lower = xp.tril(lu[..., :, :k], -1) + eye
    upper = xp.triu(lu[..., :k, :])
    perm = permutation(xp, pivots, m)
    p = (perm[..., :, None] == xp.arange(m)).astype(lu.dtype)  # p[i, r] = 1 where perm[i] = r
    return mT(p), lower, upper


def solve_triangular(xp, t, b, lower: bool, unit: bool = False):
    """t^{-1} b for triangular t (..., n, n) and b (..., n, k), by substitution (no error when singular)."""
    n = t.shape[-1]
    shape = broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    x = xp.array(xp.broadcast_to(b, shape), dtype=xp.result_type(t, b), copy=True)
    order = range(n) if lower else range(n - 1, -1, -1)
    with quiet_float_errors(xp):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            if (i > 0) if lower else (i < n - 1):
                x[..., i, :] -= (t[..., i, None, done] @ x[..., done, :])[..., 0, :]
            if not unit:
                x[..., i, :] /= t[..., i, i, None]
    return x


def lu_solve(xp, lu, pivots, b, adjoint=False):
    """op(A)^{-1} b for A = P L U given by getrf (op = conjugate transpose when adjoint)."""
    p, lower, upper = lu_unpack(xp, lu, pivots)
    if adjoint:
        y = solve_triangular(xp, mH(upper), b, lower=True)
        y = solve_triangular(xp, mH(lower), y, lower=False, unit=True)
        return p @ y
    y = solve_triangular(xp, lower, mT(p) @ b, lower=True, unit=True)
    return solve_triangular(xp, upper, y, lower=False)


def _lu_factor_kernel(name, ex):
    def kernel(xp, a, pivot=True, check_errors=False):
        if not pivot:
            raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
        require_floating(a, name.removeprefix("torch."))
        require_matrix(a, name.removeprefix("torch."))
        lu, piv, info = lu_factor(xp, a)
        if ex and not check_errors:
            return lu, piv, info
        bad = first_failure(info)
        if bad is not None:
            k = int(info[bad])
            message = (f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If you "
                       "still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                       "linalg.lu_factor_ex(A, pivot)") if not ex else \
                f"The factorization could not be completed because the input is singular (U[{k},{k}] is zero)."
            raise (LinAlgError if ex else RuntimeError)(f"{name}: {batch_prefix(a, bad)}{message}")
        return (lu, piv, info) if ex else (lu, piv)
    return kernel


def _solve_right(xp, t, b, lower: bool, unit: bool = False):
    """b t^{-1} for triangular t."""
    return mH(solve_triangular(xp, mH(t), mH(b), lower=not lower, unit=unit))


def _lu_backward(xp, p, lower, upper, g_lower, g_upper):
    """The gradient of A = P L U (m x n, k = min(m, n)) through L (m x k) and U (k x n). The square k x k
    block B1 = L1 U1 takes the square formula L1^{-H} [tril(L1^H gL1, -1) + triu(gU1 U1^H)] U1^{-H}; wide A's
    extra columns U2 = L^{-1} B2 add gU2 to it as -gU2 U2^H inside the tril and get L^{-H} gU2; tall A's extra
    rows L2 = B2 U^{-1} add -L2^H gL2 inside the triu and get gL2 U^{-H} (PyTorch's linalg_lu_backward)."""
    m, n = lower.shape[-2], upper.shape[-1]
    k = min(m, n)
    lower1, upper1 = lower[..., :k, :], upper[..., :, :k]
    g_lower1, g_upper1 = g_lower[..., :k, :], g_upper[..., :, :k]
    strictly_lower = mH(lower1) @ g_lower1
    upper_part = g_upper1 @ mH(upper1)
    if m < n:
        strictly_lower = strictly_lower - g_upper[..., :, k:] @ mH(upper[..., :, k:])
    if m > n:
        upper_part = upper_part - mH(lower[..., k:, :]) @ g_lower[..., k:, :]
    inner = xp.tril(strictly_lower, -1) + xp.triu(upper_part)
    block = _solve_right(xp, mH(upper1), solve_triangular(xp, mH(lower1), inner, lower=False, unit=True), lower=True)
    if m < n:
        block = xp.concatenate([block, solve_triangular(xp, mH(lower1), g_upper[..., :, k:], lower=False, unit=True)],
                               axis=-1)
    if m > n:
        block = xp.concatenate([block, _solve_right(xp, mH(upper1), g_lower[..., k:, :], lower=True)], axis=-2)
    return p @ block


def _lu_factor_grad(ctx, g):
    xp = ctx.xp
    g_lu = g[0]
    lu, pivots = ctx.out[0], ctx.out[1]
    p, lower, upper = lu_unpack(xp, lu, pivots)
    k = min(lu.shape[-2:])
    return (_lu_backward(xp, p, lower, upper, g_lu[..., :, :k], g_lu[..., :k, :]),) + (None,) * (len(ctx.args) - 1)


def _lu_factor_rule(a, *rest):
    k = None if a.shape is None else min(a.shape[-2:]) if known_dims(a) else None
    batch = None if a.shape is None else tuple(a.shape[:-2])
    pivots = out_type(a, None if batch is None or k is None else batch + (k,), int32)
    return out_type(a, a.shape), pivots


def _lu_factor_ex_rule(a, *rest):
    lu, pivots = _lu_factor_rule(a)
    return lu, pivots, out_type(a, None if a.shape is None else tuple(a.shape[:-2]), int32)


def known_dims(t) -> bool:
    return t.shape is not None and all(isinstance(d, int) for d in t.shape)


register("linalg_lu_factor(A: Tensor, *, pivot: bool = True) -> (Tensor, Tensor)", OPAQUE,
         _lu_factor_kernel("torch.linalg.lu_factor", ex=False), shape=_lu_factor_rule, grad=_lu_factor_grad,
         save=("A",), complex_aware=True, result_names=("LU", "pivots"), method=False, function=False,
         doc="The LU factorization with partial pivoting, packed as LAPACK's getrf (LU, 1-based pivots).")
register("linalg_lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> (Tensor, Tensor, "
         "Tensor)", OPAQUE, _lu_factor_kernel("linalg.lu_factor_ex", ex=True), shape=_lu_factor_ex_rule,
         grad=_lu_factor_grad, save=("A",), complex_aware=True, result_names=("LU", "pivots", "info"), method=False,
         function=False, doc="linalg.lu_factor that reports singular inputs in `info` instead of raising.")


def _lu_kernel(xp, a, pivot=True):
    lu, piv, _ = _lu_factor_kernel("linalg.lu", ex=True)(xp, a, pivot)
    return lu_unpack(xp, lu, piv)


def _lu_grad(ctx, g):
    xp = ctx.xp
    p, lower, upper = ctx.out
    g_lower = xp.zeros(lower.shape, lower.dtype) if g[1] is None else g[1]
    g_upper = xp.zeros(upper.shape, upper.dtype) if g[2] is None else g[2]
    return _lu_backward(xp, p, lower, upper, g_lower, g_upper), None


def _lu_rule(a, pivot=True):
    if not known_dims(a):
        return out_type(a, None), out_type(a, None), out_type(a, None)
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    return out_type(a, batch + (m, m)), out_type(a, batch + (m, k)), out_type(a, batch + (k, n))


register("linalg_lu(A: Tensor, *, pivot: bool = True) -> (Tensor, Tensor, Tensor)", OPAQUE, _lu_kernel,
         shape=_lu_rule, grad=_lu_grad, save=("A",), complex_aware=True, result_names=("P", "L", "U"), method=False,
         function=False, doc="A = P @ L @ U with partial pivoting.")


def _lu_unpack_kernel(xp, lu, pivots, unpack_data=True, unpack_pivots=True):
    if pivots.dtype != xp.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    p, lower, upper = lu_unpack(xp, lu, pivots)
    empty = xp.zeros((0,), lu.dtype)
    return (p if unpack_pivots else empty), (lower if unpack_data else empty), (upper if unpack_data else empty)


def _lu_unpack_grad(ctx, g):
    """L and U are read from below and on/above LU's diagonal; P does not depend on LU."""
    xp, lu = ctx.xp, ctx.LU_data
    k = min(lu.shape[-2:])
    g_lu = xp.zeros(lu.shape, lu.dtype)
    if g[1] is not None and g[1].size:
        g_lu[..., :, :k] += xp.tril(g[1], -1)
    if g[2] is not None and g[2].size:
        g_lu[..., :k, :] += xp.triu(g[2])
    return g_lu, None, None, None


register("lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True) -> "
         "(Tensor, Tensor, Tensor)", OPAQUE, _lu_unpack_kernel, shape=lambda lu, piv, *flags: _lu_rule(lu),
         grad=_lu_unpack_grad, save=("LU_data",), complex_aware=True, result_names=("P", "L", "U"), method=False,
         doc="(P, L, U) from linalg.lu_factor's packed LU and pivots, so that A = P @ L @ U.")


def _vector_rhs(a, b) -> bool:
    """PyTorch's rule: b is a (batch of) vector(s) when 1-D, or when its shape is a's without the last dim."""
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


def _lu_solve_kernel(xp, lu, pivots, b, left=True, adjoint=False):
    require_floating(lu, "linalg.lu_solve")
    if pivots.dtype != xp.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if not left:
        return mH(lu_solve(xp, lu, pivots, mH(b), adjoint=not adjoint))
    return lu_solve(xp, lu, pivots, b, adjoint)


def _lu_solve_grad(ctx, g):
    xp, lu, pivots, x = ctx.xp, ctx.LU, ctx.pivots, ctx.out
    p, lower, upper = lu_unpack(xp, lu, pivots)
    # X = op(A)^{-1} B (left) or B op(A)^{-1}: the gradient of the matrix that is solved with, M = op(A).
    if ctx.left:
        g_b = lu_solve(xp, lu, pivots, g, adjoint=not ctx.adjoint)
        g_m = -g_b @ mH(x)
    else:
        g_b = mH(lu_solve(xp, lu, pivots, mH(g), adjoint=ctx.adjoint))
        g_m = -mH(x) @ g_b
    g_a = mH(g_m) if ctx.adjoint else g_m
    # A = P L U with L = I + tril(LU, -1) and U = triu(LU).
    g_lu = xp.tril(mT(p) @ g_a @ mH(upper), -1) + xp.triu(mH(lower) @ mT(p) @ g_a)
    return g_lu, None, g_b, None, None


register("linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) "
         "-> Tensor", OPAQUE, _lu_solve_kernel,
         shape=shape_rule(lambda lu, piv, b, *rest: broadcast_shapes(lu[:-2], b[:-2]) + tuple(b[-2:])),
         grad=_lu_solve_grad, save=("LU", "B", "out"), complex_aware=True, method=False, function=False,
         doc="Solves op(A) X = B (or X op(A) = B) from A's LU factorization.")


# --- inverse and solve -------------------------------------------------------------------

def _singular_message(a, info, name):
    bad = first_failure(info)
    return bad, (f"{name}: {batch_prefix(a, bad)}The diagonal element {int(info[bad])} is zero, the inversion "
                 "could not be completed because the input matrix is singular.")


def _inv_kernel(name):
    def kernel(xp, a):
        require_floating(a, name)
        require_matrix(a, name, square=True)
        try:
            return xp.linalg.inv(a)
        except xp.linalg.LinAlgError:
            _, message = _singular_message(a, lu_factor(xp, a)[2], name)
            raise LinAlgError(message) from None
    return kernel


def _inv_grad(ctx, g):
    inverse = ctx.out
    return (-mH(inverse) @ g @ mH(inverse),)


_square = shape_rule(lambda a: a)
register("linalg_inv(A: Tensor) -> Tensor", OPAQUE, _inv_kernel("linalg.inv"), shape=_square, grad=_inv_grad,
         save=("out",), complex_aware=True, method=False, function=False, doc="The inverse of a square matrix.")
register("inverse(self: Tensor) -> Tensor", OPAQUE, _inv_kernel("linalg.inv"), shape=_square, grad=_inv_grad,
         save=("out",), complex_aware=True, doc="The inverse of a square matrix (torch.linalg.inv).")


def _inv_ex_kernel(xp, a, check_errors=False):
    require_floating(a, "linalg.inv_ex")
    require_matrix(a, "linalg.inv_ex", square=True)
    lu, pivots, info = lu_factor(xp, a)
    if first_failure(info) is None:
        return xp.linalg.inv(a), info
    if check_errors:
        raise LinAlgError(_singular_message(a, info, "linalg.inv_ex")[1])
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return lu_solve(xp, lu, pivots, eye), info


register("linalg_inv_ex(A: Tensor, *, check_errors: bool = False) -> (Tensor, Tensor)", OPAQUE, _inv_ex_kernel,
         shape=lambda a, check=False: (_square(a), out_type(a, None if a.shape is None else tuple(a.shape[:-2]),
                                                             int32)),
         grad=lambda ctx, g: (-mH(ctx.out[0]) @ g[0] @ mH(ctx.out[0]), None), save=("out",), complex_aware=True,
         result_names=("inverse", "info"), method=False, function=False,
         doc="linalg.inv that reports singular inputs in `info` (1-based zero pivot) instead of raising.")


def _solve_parts(a, b, left):
    require_floating(a, "linalg.solve")
    require_matrix(a, "linalg.solve", square=True)
    same_dtype("linalg.solve: Expected A and B to have the same dtype, but found A of type {} and B of type {} "
               "instead", a, b)
    vector = _vector_rhs(a, b) if left else False
    b_matrix = b[..., None] if vector else b
    n = a.shape[-1]
    if b_matrix.ndim < 2 or b_matrix.shape[-2 if left else -1] != n:
        rows, cols = (b_matrix.shape[-2], b_matrix.shape[-1]) if b_matrix.ndim >= 2 else (b.shape[0], 1)
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {rows}x{cols})")
    return vector, b_matrix


def _solve_kernel(xp, a, b, left=True):
    vector, b_matrix = _solve_parts(a, b, left)
    try:
        if left:
            x = xp.linalg.solve(a, b_matrix)
        else:
            x = mT(xp.linalg.solve(mT(a), mT(b_matrix)))
    except xp.linalg.LinAlgError:
        info = lu_factor(xp, a)[2]
        bad = first_failure(info)
        raise LinAlgError(f"torch.linalg.solve: {batch_prefix(a, bad)}The solver failed because the input matrix "
                          "is singular.") from None
    return x[..., 0] if vector else x


def _solve_grad(ctx, g):
    xp, a, b, x = ctx.xp, ctx.A, ctx.B, ctx.out
    vector, _ = _solve_parts(a, b, ctx.left)
    if vector:
        g, x = g[..., None], x[..., None]
    if ctx.left:
        g_b = xp.linalg.solve(mH(a), g)
        g_a = -g_b @ mH(x)
    else:
        g_b = mH(xp.linalg.solve(a, mH(g)))
        g_a = -mH(x) @ g_b
    return g_a, (g_b[..., 0] if vector else g_b), None


def _solve_rule(a, b, left=True):
    if not (known_dims(a) and known_dims(b)):
        return out_type(b, None)
    if len(b.shape) == 1 or (len(b.shape) == len(a.shape) - 1 and tuple(b.shape) == tuple(a.shape[:-1])):
        return out_type(b, broadcast_shapes(a.shape[:-2], b.shape[:-1]) + (a.shape[-1],))
    return out_type(b, broadcast_shapes(a.shape[:-2], b.shape[:-2]) + tuple(b.shape[-2:]))


register("linalg_solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor", OPAQUE, _solve_kernel,
         shape=_solve_rule, grad=_solve_grad, save=("A", "B", "out"), complex_aware=True, method=False,
         function=False, doc="The solution X of A X = B (or X A = B when left=False), batched and broadcast.")


# --- determinants ----------------------------------------------------------------------

def _det_kernel(xp, a):
    require_floating(a, "linalg.det")
    require_matrix(a, "linalg.det", square=True)
    return xp.asarray(xp.linalg.det(a))


def _det_grad(ctx, g):
    # g * adj(A)^H through the SVD A = U S Vh: adj(A) = det(U) det(Vh) V diag(prod_{j != i} s_j) U^H,
    # which holds for singular A too (where A^{-1} det(A) does not).
    xp, a = ctx.xp, ctx.args[0]
    if a.shape[-1] == 0:
        return (xp.zeros(a.shape, a.dtype),)
    u, s, vh = xp.linalg.svd(a)
    phase = conj(xp.linalg.det(u) * xp.linalg.det(vh))
    others = _products_of_others(xp, s)
    return (((phase * g)[..., None, None] * (u * others[..., None, :])) @ vh,)


def _products_of_others(xp, s):
    """prod_{j != i} s_j for each i (no division, so zeros are fine)."""
    ones = xp.ones(s.shape[:-1] + (1,), s.dtype)
    before = xp.cumprod(xp.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = xp.flip(xp.cumprod(xp.concatenate([ones, xp.flip(s, -1)[..., :-1]], axis=-1), axis=-1), -1)
    return before * after


_batch_scalar = shape_rule(lambda a: a[:-2])
register("linalg_det(A: Tensor) -> Tensor", OPAQUE, _det_kernel, shape=_batch_scalar, grad=_det_grad,
         save=("A",), complex_aware=True, method=False, function=False, doc="The determinant (batched).")
register("det(self: Tensor) -> Tensor", OPAQUE, _det_kernel, shape=_batch_scalar, grad=_det_grad, save=("self",),
         complex_aware=True, doc="The determinant (batched); torch.linalg.det.")


def _slogdet_kernel(name):
    def kernel(xp, a):
        require_floating(a, name)
        require_matrix(a, name, square=True)
        sign, logabsdet = xp.linalg.slogdet(a)
        return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabsdet)
    return kernel


def _slogdet_grad(ctx, g):
    xp, a = ctx.xp, ctx.args[0]
    g_sign, g_logabs = g
    sign = ctx.out[0]
    weight = g_logabs.astype(a.dtype)
    if a.dtype.kind == "c":
        weight = weight - 1j * (conj(g_sign) * sign).imag
    inverse_h = mH(xp.linalg.inv(a))
    return (weight[..., None, None] * inverse_h,)


def _slogdet_rule(a):
    t = _batch_scalar(a)
    return t, out_type(t, t.shape, a.dtype.to_real() if a.dtype is not None else None)


register("linalg_slogdet(A: Tensor) -> (Tensor, Tensor)", OPAQUE, _slogdet_kernel("linalg.slogdet"),
         shape=_slogdet_rule, grad=_slogdet_grad, save=("A",), complex_aware=True, result_names=("sign", "logabsdet"),
         method=False, function=False, doc="(sign, log|det|) of square matrices, stable where det under- or overflows.")
register("slogdet(self: Tensor) -> (Tensor, Tensor)", OPAQUE, _slogdet_kernel("linalg.slogdet"), shape=_slogdet_rule,
         grad=_slogdet_grad, save=("self",), complex_aware=True, result_names=("sign", "logabsdet"),
         doc="(sign, log|det|) of square matrices; torch.linalg.slogdet.")


def _logdet_kernel(xp, a):
    sign, logabsdet = _slogdet_kernel("linalg.slogdet")(xp, a)
    if a.dtype.kind == "c":
        return xp.log(sign) + logabsdet
    return xp.asarray(xp.where(sign < 0, xp.nan, logabsdet), dtype=a.dtype)


register("logdet(self: Tensor) -> Tensor", OPAQUE, _logdet_kernel, shape=_batch_scalar,
         grad=lambda ctx, g: (mH(ctx.xp.linalg.inv(ctx.self)) * g[..., None, None],), save=("self",),
         doc="log(det(A)) (nan for a negative determinant).")


# --- matrix_power ------------------------------------------------------------------------

def _matrix_power_kernel(xp, a, n):
    if isinstance(n, float) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    require_matrix(a, "linalg.matrix_power", square=True)
    if n < 0:
        a = _inv_kernel("linalg.inv")(xp, a)
    return xp.asarray(xp.linalg.matrix_power(a, abs(n)))


def _matrix_power_grad(ctx, g):
    xp, a, n = ctx.xp, ctx.args[0], ctx.args[1]
    base = xp.linalg.inv(a) if n < 0 else a
    m = abs(n)
    powers = [xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)]
    for _ in range(m - 1):
        powers.append(powers[-1] @ base)
    g_base = xp.zeros(a.shape, dtype=g.dtype)
    for k in range(m):
        g_base = g_base + mT(powers[k]) @ g @ mT(powers[m - 1 - k])
    if n < 0:
        g_base = -mT(base) @ g_base @ mT(base)
    return g_base, None


for _name, _first in (("matrix_power", "self"), ("linalg_matrix_power", "A")):
    register(f"{_name}({_first}: Tensor, n: int) -> Tensor", OPAQUE, _matrix_power_kernel,
             shape=shape_rule(lambda a, n: a), grad=_matrix_power_grad, save=(_first,),
             method=_name == "matrix_power", function=_name == "matrix_power",
             doc="The n-th power of square matrices (n < 0 raises the inverse to -n).")
