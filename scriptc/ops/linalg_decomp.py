"""Decompositions and what is built on them: cholesky, qr, svd, eigh, pinv, lstsq, matrix_rank.

Kernels call numpy.linalg (LAPACK); gradients are PyTorch's formulas (its FunctionsManual.cpp), written
for complex inputs in its conjugate Wirtinger convention, so every op here is `complex_aware`.
"""

from __future__ import annotations

import itertools

from scriptc.errors import LinAlgError, ShapeError
from scriptc.types import int32, int64

from . import register
from .linalg_eigen import eigh_check
from .linalg_solve import batch_prefix, first_failure, known_dims, solve_triangular
from .matrix import mH, out_type, real_dtype, real_type, require_floating, require_matrix, torch_name
from .rules import broadcast_shapes
from .schema import OPAQUE



# --- cholesky ------------------------------------------------------------------------------

def _not_positive_definite(xp, a):
    """Per matrix, the order of the first leading minor that is not positive-definite (0 when none)."""
    flat = a.reshape((-1,) + a.shape[-2:])
    info = xp.zeros(flat.shape[0], dtype=xp.int32)
    for i, m in enumerate(flat):
        try:
            xp.linalg.cholesky(m)
            continue
        except xp.linalg.LinAlgError:
            pass
        lo, hi = 1, m.shape[-1]  # leading minors stop being positive-definite at some order in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                xp.linalg.cholesky(m[:mid, :mid])
                lo = mid + 1
            except xp.linalg.LinAlgError:
                hi = mid
        info[i] = lo
    return info.reshape(a.shape[:-2])


def _cholesky_factor(xp, a, upper):
    lower = xp.linalg.cholesky(a)
    return mH(lower) if upper else lower


def _cholesky_kernel(name):
    def kernel(xp, a, upper=False):
        require_floating(a, name)
        require_matrix(a, name, square=True)
        try:
            return _cholesky_factor(xp, a, upper)
        except xp.linalg.LinAlgError:
            info = _not_positive_definite(xp, a)
            bad = first_failure(info)
            raise LinAlgError(f"{name}: {batch_prefix(a, bad)}The factorization could not be completed because the "
                              f"input is not positive-definite (the leading minor of order {int(info[bad])} is not "
                              "positive-definite).") from None
    return kernel


def _cholesky_ex_kernel(xp, a, upper=False, check_errors=False):
    require_floating(a, "linalg.cholesky_ex")
    require_matrix(a, "linalg.cholesky_ex", square=True)
    info = _not_positive_definite(xp, a)
    if not info.any():
        return _cholesky_factor(xp, a, upper), info
    if check_errors:
        return _cholesky_kernel("linalg.cholesky_ex")(xp, a, upper), info
    # Where the factorization fails LAPACK leaves the input's triangle; elsewhere it is the factor.
    out = xp.tril(a) if not upper else xp.triu(a)
    ok = info == 0
    if ok.any():
        out[ok] = _cholesky_factor(xp, a[ok], upper)
    return out, info


def cholesky_grad(xp, factor, g, upper):
    """gA = L^{-H} phi(L^H gL) L^{-1}, symmetric, with phi(X) = (X + tril(X, -1)^H) / 2 on tril(X)."""
    lower, g_lower = (mH(factor), mH(g)) if upper else (factor, g)
    inner = xp.tril(mH(lower) @ g_lower)
    inner = 0.5 * (inner + mH(xp.tril(inner, -1)))
    left = solve_triangular(xp, mH(lower), inner, lower=False)
    return mH(solve_triangular(xp, mH(lower), mH(left), lower=False))


_same = lambda a, *rest: out_type(a, a.shape)  # noqa: E731
register("linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor", OPAQUE, _cholesky_kernel("linalg.cholesky"),
         shape=_same, grad=lambda ctx, g: (cholesky_grad(ctx.xp, ctx.out, g, ctx.upper), None), save=("out",),
         complex_aware=True, method=False, function=False,
         doc="The Cholesky factor L of a Hermitian positive-definite A = L L^H (U^H U when upper).")
register("cholesky(self: Tensor, upper: bool = False) -> Tensor", OPAQUE, _cholesky_kernel("linalg.cholesky"),
         shape=_same, grad=lambda ctx, g: (cholesky_grad(ctx.xp, ctx.out, g, ctx.upper), None), save=("out",),
         complex_aware=True, doc="The Cholesky factor (deprecated in PyTorch for torch.linalg.cholesky).")
register("linalg_cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> (Tensor, Tensor)",
         OPAQUE, _cholesky_ex_kernel,
         shape=lambda a, *rest: (out_type(a, a.shape), out_type(a, None if a.shape is None else a.shape[:-2], int32)),
         grad=lambda ctx, g: (cholesky_grad(ctx.xp, ctx.out[0], g[0], ctx.upper), None, None), save=("out",),
         complex_aware=True, result_names=("L", "info"), method=False, function=False,
         doc="linalg.cholesky that reports failures in `info` instead of raising.")


# --- QR ------------------------------------------------------------------------------------

_QR_MODES = ("reduced", "complete", "r")


def _qr_kernel(xp, a, mode="reduced"):
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    require_floating(a, "linalg.qr")
    require_matrix(a, "linalg.qr")
    if mode == "r":
        return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r")
    q, r = xp.linalg.qr(a, mode=mode)
    return q, r


def _qr_grad(ctx, g):
    xp, mode = ctx.xp, ctx.args[1] if isinstance(ctx.args[1], str) else ("reduced" if ctx.args[1] else "complete")
    q, r = ctx.out
    g_q, g_r = g
    m, n = q.shape[-2], r.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    inner = g_r @ mH(r) - mH(q) @ g_q
    if m >= n:
        upper = xp.triu(inner)
        sym = upper + mH(upper)
        diagonal = xp.einsum("...ii->...i", sym)
        diagonal.real *= 0.5
        total = q @ sym + g_q
        return mH(solve_triangular(xp, r, mH(total), lower=False)), None
    skew = xp.tril(-inner - mH(-inner))
    if skew.dtype.kind == "c":
        xp.einsum("...ii->...i", skew).imag *= 0.5
    left = q @ skew
    part = mH(solve_triangular(xp, r[..., :m], mH(left), lower=False))
    pad = xp.zeros(part.shape[:-1] + (n - m,), part.dtype)
    return xp.concatenate([part, pad], axis=-1) + q @ g_r, None


def _qr_rule(a, mode="reduced"):
    if not known_dims(a):
        return out_type(a, None), out_type(a, None)
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    if mode == "r":
        return out_type(a, (0,)), out_type(a, batch + (k, n))
    if mode == "complete" or mode is False:
        return out_type(a, batch + (m, m)), out_type(a, batch + (m, n))
    return out_type(a, batch + (m, k)), out_type(a, batch + (k, n))


register("linalg_qr(A: Tensor, mode: str = 'reduced') -> (Tensor, Tensor)", OPAQUE, _qr_kernel, shape=_qr_rule,
         grad=_qr_grad, save=("out",), complex_aware=True, result_names=("Q", "R"), method=False, function=False,
         doc="A = Q R with orthonormal Q and upper-triangular R ('reduced', 'complete' or 'r').")
register("qr(self: Tensor, some: bool = True) -> (Tensor, Tensor)", OPAQUE,
         lambda xp, a, some=True: _qr_kernel(xp, a, "reduced" if some else "complete"),
         shape=lambda a, some=True: _qr_rule(a, "reduced" if some else "complete"), grad=_qr_grad, save=("out",),
         complex_aware=True, result_names=("Q", "R"), doc="torch.qr: linalg.qr with some=False meaning 'complete'.")


# --- SVD ------------------------------------------------------------------------------------

def svd_grad(xp, u, s, vh, g_u, g_s, g_vh):
    """PyTorch's svd_backward (distinct singular values; full rank when rectangular or complex)."""
    m, n = u.shape[-2], vh.shape[-1]
    if g_u is None and g_vh is None:
        return u @ (g_s[..., :, None] * vh) if m >= n else (u * g_s[..., None, :]) @ vh
    k = s.shape[-1]
    g_u = xp.zeros(u.shape, u.dtype) if g_u is None else g_u
    g_vh = xp.zeros(vh.shape, vh.dtype) if g_vh is None else g_vh
    g_s = xp.zeros(s.shape, s.dtype) if g_s is None else g_s
    u_h_gu = mH(u) @ g_u
    u_h_gu = u_h_gu - mH(u_h_gu)
    v_h_gv = vh @ mH(g_vh)
    v_h_gv = v_h_gv - mH(v_h_gv)
    s2 = s * s
    e = s2[..., None, :] - s2[..., :, None]
    xp.einsum("...ii->...i", e)[...] = 1
    ga = (u_h_gu * s[..., None, :] + s[..., :, None] * v_h_gv) / e
    ga = ga + g_s[..., :, None] * xp.eye(k, dtype=ga.dtype)
    if u.dtype.kind == "c":
        ga = ga + xp.einsum("...ii->...i", u_h_gu)[..., :, None] * xp.eye(k) / (2 * s[..., :, None])
    if m > n:
        ga = u @ ga
        gu_sinv = g_u / s[..., None, :]
        ga = ga + gu_sinv - u @ (mH(u) @ gu_sinv)
        return ga @ vh
    if m < n:
        ga = ga @ vh
        sinv_gvh = g_vh / s[..., :, None]
        ga = ga + sinv_gvh - (sinv_gvh @ mH(vh)) @ vh
        return u @ ga
    return u @ ga @ vh


def _svd_kernel(xp, a, full_matrices=True, driver=None):
    require_floating(a, "linalg.svd")
    require_matrix(a, "linalg.svd")
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _svd_grad(ctx, g):
    u, s, vh = ctx.out
    k = s.shape[-1]
    g_u, g_s, g_vh = g
    if ctx.full_matrices:
        u, vh = u[..., :, :k], vh[..., :k, :]
        g_u, g_vh = g_u[..., :, :k], g_vh[..., :k, :]
    return svd_grad(ctx.xp, u, s, vh, g_u, g_s, g_vh), None, None


def _svd_rule(a, full_matrices=True, driver=None):
    if not known_dims(a):
        return out_type(a, None), out_type(a, None, real_type(a)), out_type(a, None)
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    rows, cols = (m, n) if full_matrices else (k, k)
    return out_type(a, batch + (m, rows)), out_type(a, batch + (k,), real_type(a)), out_type(a, batch + (cols, n))


register("linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str? = None) -> (Tensor, Tensor, Tensor)",
         OPAQUE, _svd_kernel, shape=_svd_rule, grad=_svd_grad, save=("out",), complex_aware=True,
         result_names=("U", "S", "Vh"), method=False, function=False,
         doc="A = U diag(S) Vh with descending singular values S.")


def _torch_svd_kernel(xp, a, some=True, compute_uv=True):
    u, s, vh = _svd_kernel(xp, a, full_matrices=not some)
    if not compute_uv:
        m, n = a.shape[-2:]
        return xp.zeros(a.shape[:-2] + (m, m), a.dtype), s, xp.zeros(a.shape[:-2] + (n, n), a.dtype)
    return u, s, mH(vh)


def _torch_svd_grad(ctx, g):
    if not ctx.compute_uv:
        raise RuntimeError("torch.svd: Setting compute_uv to false in torch.svd doesn't compute singular matrices, "
                           "and hence we cannot compute backward. Please use torch.svd(compute_uv=True)")
    u, s, v = ctx.out
    k = s.shape[-1]
    g_u, g_s, g_v = g
    return svd_grad(ctx.xp, u[..., :, :k], s, mH(v[..., :, :k]), g_u[..., :, :k], g_s, mH(g_v[..., :, :k])), None, None


def _torch_svd_rule(a, some=True, compute_uv=True):
    u, s, vh = _svd_rule(a, full_matrices=not some or not compute_uv)
    return u, s, out_type(vh, None if vh.shape is None else vh.shape[:-2] + (vh.shape[-1], vh.shape[-2]))


register("svd(self: Tensor, some: bool = True, compute_uv: bool = True) -> (Tensor, Tensor, Tensor)", OPAQUE,
         _torch_svd_kernel, shape=_torch_svd_rule, grad=_torch_svd_grad, save=("out",), complex_aware=True,
         result_names=("U", "S", "V"), doc="torch.svd: A = U diag(S) V^H, returning V (not Vh).")


def _svdvals_kernel(xp, a, driver=None):
    require_floating(a, "linalg.svd")
    require_matrix(a, "linalg.svd")
    return xp.linalg.svd(a, compute_uv=False)


def _svdvals_grad(ctx, g):
    u, s, vh = ctx.xp.linalg.svd(ctx.A, full_matrices=False)
    return svd_grad(ctx.xp, u, s, vh, None, g, None), None


register("linalg_svdvals(A: Tensor, *, driver: str? = None) -> Tensor", OPAQUE, _svdvals_kernel,
         shape=lambda a, driver=None: _svd_rule(a, False)[1], grad=_svdvals_grad, save=("A",), complex_aware=True,
         method=False, function=False, doc="The singular values of A, descending.")


# --- pseudo-inverse, rank, least squares --------------------------------------------------------

def _tolerance(xp, s_max, shape, dtype, atol, rtol):
    """max(atol, rtol * s_max), with PyTorch's default rtol = eps * max(m, n) when neither is given."""
    eps = xp.finfo(dtype).eps
    if rtol is None:
        rtol = eps * max(shape[-2:]) if atol is None or atol == 0 else 0.0
    return xp.maximum(0.0 if atol is None else atol, rtol * s_max)


def _spectrum(xp, a, hermitian, name):
    """Singular values (descending) and the factors that rebuild A (U, S, Vh)."""
    if hermitian:
        eigh_check(a, "L", "linalg.eigh")
        values, vectors = xp.linalg.eigh(a)
        order = xp.argsort(-xp.abs(values), axis=-1)
        values = xp.take_along_axis(values, order, axis=-1)
        vectors = xp.take_along_axis(vectors, order[..., None, :], axis=-1)
        return xp.abs(values), vectors, xp.sign(values)[..., :, None] * mH(vectors)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return s, u, vh


def _pinv_kernel(xp, a, atol=None, rtol=None, hermitian=False, rcond=None):
    require_floating(a, "linalg.pinv")
    require_matrix(a, "linalg.pinv")
    if rcond is not None:
        rtol = rcond
    if a.size == 0:
        return xp.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    s, u, vh = _spectrum(xp, a, hermitian, "linalg.pinv")
    tol = _tolerance(xp, s[..., :1], a.shape, s.dtype, atol, rtol)
    inverse = xp.where(s > tol, 1 / xp.where(s > tol, s, 1), 0).astype(s.dtype)
    return (mH(vh) * inverse[..., None, :]) @ mH(u)


def pinv_grad(xp, a, pinv_a, g):
    """PyTorch's pinv_backward."""
    m, n = a.shape[-2:]
    pinv_h, g_h = mH(pinv_a), mH(g)
    if m <= n:
        k = g_h @ pinv_a
        k_pinv_h = k @ pinv_h
        return -mH(pinv_a @ k) + k_pinv_h - (a @ pinv_a) @ k_pinv_h + (pinv_h @ pinv_a) @ (g_h - k @ a)
    k = pinv_a @ g_h
    pinv_h_k = pinv_h @ k
    return -mH(k @ pinv_a) + (g_h - a @ k) @ pinv_a @ pinv_h + pinv_h_k - pinv_h_k @ pinv_a @ a


def _transposed(a, *rest):
    if a.shape is None:
        return out_type(a, None)
    return out_type(a, tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]))


register("linalg_pinv(A: Tensor, *, atol: float? = None, rtol: float? = None, hermitian: bool = False, "
         "rcond: float? = None) -> Tensor", OPAQUE, _pinv_kernel, shape=_transposed,
         grad=lambda ctx, g: (pinv_grad(ctx.xp, ctx.A, ctx.out, g), None, None, None, None), save=("A", "out"),
         complex_aware=True, method=False, function=False,
         doc="The Moore-Penrose pseudo-inverse; singular values <= max(atol, rtol * largest) count as zero.")
register("pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor", OPAQUE,
         lambda xp, a, rcond=1e-15: _pinv_kernel(xp, a, rtol=rcond), shape=_transposed,
         grad=lambda ctx, g: (pinv_grad(ctx.xp, ctx.self, ctx.out, g), None), save=("self", "out"),
         complex_aware=True, doc="The pseudo-inverse (torch.linalg.pinv with rtol=rcond).")


def _matrix_rank_kernel(xp, a, atol=None, rtol=None, hermitian=False, tol=None):
    require_floating(a, "linalg.matrix_rank")
    require_matrix(a, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    if a.size == 0:
        return xp.zeros(a.shape[:-2], xp.int64)
    s = _spectrum(xp, a, hermitian, "linalg.matrix_rank")[0]
    tol_ = _tolerance(xp, s[..., :1], a.shape, s.dtype, atol, rtol)
    return xp.asarray((s > tol_).sum(axis=-1), dtype=xp.int64)


register("linalg_matrix_rank(A: Tensor, *, atol: float? = None, rtol: float? = None, hermitian: bool = False, "
         "tol: float? = None) -> Tensor", OPAQUE, _matrix_rank_kernel,
         shape=lambda a, *rest: out_type(a, None if a.shape is None else a.shape[:-2], int64), method=False,
         function=False, doc="The number of singular values above max(atol, rtol * largest).")


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_parts(a, b, driver):
    require_floating(a, "linalg.lstsq")
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {torch_name(a.dtype)} and other's dtype {torch_name(b.dtype)}")
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if not (a.ndim >= b.ndim and a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = b.ndim == a.ndim - 1
    b_matrix = b[..., None] if vector else b
    if b_matrix.shape[-2] != a.shape[-2]:
        raise ShapeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = broadcast_shapes(a.shape[:-2], b_matrix.shape[:-2])
    return vector, b_matrix, batch


def _lstsq_kernel(xp, a, b, rcond=None, driver=None):
    vector, b_matrix, batch = _lstsq_parts(a, b, driver)
    driver = driver or "gelsy"
    m, n = a.shape[-2:]
    k = b_matrix.shape[-1]
    a_full = xp.broadcast_to(a, batch + (m, n))
    b_full = xp.broadcast_to(b_matrix, batch + (m, k))
    real = real_dtype(a.dtype)
    solution = xp.empty(batch + (n, k), a.dtype)
    ranks = xp.empty(batch, xp.int64)
    singular = xp.empty(batch + (min(m, n),), real)
    for index in itertools.product(*map(range, batch)):
        x, _, rank, s = xp.linalg.lstsq(a_full[index], b_full[index], rcond=rcond)
        solution[index], ranks[index], singular[index] = x, rank, s
    full_rank = bool((ranks == min(m, n)).all())
    if driver != "gelsy" and m > n and full_rank:
        residuals = (xp.abs(a_full @ solution - b_full) ** 2).sum(axis=-2)
        residuals = residuals[..., 0] if vector else residuals
    else:
        residuals = xp.zeros((0,), real)
    rank_out = ranks if driver != "gels" else xp.zeros((0,), xp.int64)
    singular_out = singular if driver in ("gelsd", "gelss") else xp.zeros((0,), real)
    return (solution[..., 0] if vector else solution), residuals.astype(real), rank_out, singular_out


def _lstsq_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.A, ctx.B
    vector, b_matrix, _ = _lstsq_parts(a, b, ctx.driver)
    g_x, g_residuals = g[0], g[1]
    x = ctx.out[0]
    if vector:
        g_x, x = g_x[..., None], x[..., None]
    pinv_a = _pinv_kernel(xp, a)
    g_a = pinv_grad(xp, a, pinv_a, g_x @ mH(b_matrix))
    g_b = mH(pinv_a) @ g_x
    if g_residuals is not None and g_residuals.size:
        g_l = (g_residuals[..., None] if vector else g_residuals)[..., None, :]
        r = a @ x - b_matrix
        g_a = g_a + 2 * (g_l * r) @ mH(x)
        g_b = g_b - 2 * g_l * r
    return g_a, (g_b[..., 0] if vector else g_b), None, None


def _lstsq_rule(a, b, rcond=None, driver=None):
    if not (known_dims(a) and known_dims(b)):
        return (out_type(a, None), out_type(a, None, real_type(a)), out_type(a, None, int64),
                out_type(a, None, real_type(a)))
    vector = len(b.shape) == 1 or (len(b.shape) == len(a.shape) - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    b_shape = tuple(b.shape) + (1,) if vector else tuple(b.shape)
    batch = broadcast_shapes(a.shape[:-2], b_shape[:-2])
    m, n = a.shape[-2:]
    solution = batch + ((n,) if vector else (n, b_shape[-1]))
    driver = driver or "gelsy"
    rank = batch if driver != "gels" else (0,)
    singular = batch + (min(m, n),) if driver in ("gelsd", "gelss") else (0,)
    return (out_type(a, solution), out_type(a, None, real_type(a)), out_type(a, rank, int64),
            out_type(a, singular, real_type(a)))


register("linalg_lstsq(A: Tensor, B: Tensor, rcond: float? = None, *, driver: str? = None) -> (Tensor, Tensor, "
         "Tensor, Tensor)", OPAQUE, _lstsq_kernel, shape=_lstsq_rule, grad=_lstsq_grad, save=("A", "B", "out"),
         complex_aware=True, result_names=("solution", "residuals", "rank", "singular_values"),
         nondifferentiable_outputs=(2, 3), method=False,
         function=False, doc="The least-squares solution of A X = B (minimum norm when rank-deficient).")

