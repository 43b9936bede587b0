"""Reference cases for the matrix ops: products, einsum, diagonals and norms (merged into cases.CASES)."""

from __future__ import annotations

import math

import numpy as np

from .cases import Case, Int

rng = np.random.default_rng(2718)
INF = math.inf


def rand(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def transposed(*shape):
    return np.ascontiguousarray(rand(*reversed(shape))).T


def _expm_ref(a):
    """exp(A) through the eigendecomposition (random matrices are diagonalisable)."""
    out = np.empty(a.shape)
    for index in np.ndindex(a.shape[:-2]):
        w, v = np.linalg.eig(a[index])
        out[index] = (v @ np.diag(np.exp(w)) @ np.linalg.inv(v)).real
    return out


def _linalg(name):
    return lambda torch, *a, **k: getattr(torch.linalg, name)(*a, **k)


def _method(name):
    return lambda torch, t, *a, **k: getattr(t, name)(*a, **k)


def _addmm_ref(bias, m1, m2, beta=1, alpha=1):
    return beta * bias + alpha * (m1 @ m2)


def _vector_norm(x, ord=2, dim=None, keepdim=False):
    axes = None if dim is None else tuple([dim] if isinstance(dim, int) else dim)
    a = np.abs(x)
    if ord == INF:
        return a.max(axis=axes, keepdims=keepdim)
    if ord == -INF:
        return a.min(axis=axes, keepdims=keepdim)
    if ord == 0:
        return (a != 0).sum(axis=axes, keepdims=keepdim).astype(float)
    return (a ** ord).sum(axis=axes, keepdims=keepdim) ** (1 / ord)


def _matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False):
    m = np.moveaxis(x, dim, (-2, -1))
    if ord == "fro":
        out = np.sqrt((np.abs(m) ** 2).sum(axis=(-2, -1)))
    elif ord == "nuc":
        out = np.linalg.svd(m, compute_uv=False).sum(-1)
    elif ord in (2, -2):
        s = np.linalg.svd(m, compute_uv=False)
        out = s.max(-1) if ord == 2 else s.min(-1)
    else:
        sums = np.abs(m).sum(axis=-2 if abs(ord) == 1 else -1)
        out = sums.max(-1) if ord > 0 else sums.min(-1)
    if keepdim:
        out = np.expand_dims(out, tuple(sorted(d % x.ndim for d in dim)))
    return out


def _cdist(a, b, p=2.0):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == INF:
        return d.max(-1)
    if p == 0:
        return (d != 0).sum(-1).astype(float)
    return (d ** p).sum(-1) ** (1 / p)


def _diagonal(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2)


def _diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _kron(a, b):
    return np.kron(a, b)


CASES: dict[str, list[Case]] = {
    "dot": [Case((rand(5), rand(5)), np.dot), Case((rand(0), rand(0)), np.dot, label="empty")],
    "vdot": [Case((rand(4), rand(4)), np.vdot)],
    "inner": [Case((rand(3, 4), rand(2, 4)), np.inner), Case((rand(2, 3, 4), rand(4)), np.inner, label="3d-1d"),
              Case((rand(3), rand()), lambda a, b: a * b, label="0-d")],
    "outer": [Case((rand(3), rand(4)), np.outer)],
    "ger": [Case((rand(3), rand(2)), np.outer)],
    "mv": [Case((rand(3, 4), rand(4)), np.matmul), Case((transposed(3, 4), rand(4)), np.matmul, label="strided")],
    "addmv": [Case((rand(3), rand(3, 4), rand(4)), lambda b, m, v, **k: _addmm_ref(b, m, v, **k),
                   kwargs={"beta": 0.5, "alpha": 2.0}),
              Case((rand(1), rand(3, 2), rand(2)), lambda b, m, v: b + m @ v, label="broadcast")],
    "addmm": [Case((rand(3, 2), rand(3, 4), rand(4, 2)), _addmm_ref),
              Case((rand(2), transposed(3, 4), rand(4, 2)), _addmm_ref, kwargs={"beta": 2, "alpha": -1},
                   label="broadcast strided"),
              Case((np.full((3, 2), np.nan), rand(3, 4), rand(4, 2)), lambda b, m1, m2, beta: m1 @ m2,
                   kwargs={"beta": 0}, grad=False, label="beta 0 ignores nan")],
    "baddbmm": [Case((rand(2, 3, 2), rand(2, 3, 4), rand(2, 4, 2)), _addmm_ref),
                Case((rand(3, 1), rand(2, 3, 4), rand(2, 4, 2)), _addmm_ref, kwargs={"alpha": 0.5},
                     label="broadcast")],
    "addbmm": [Case((rand(3, 2), rand(2, 3, 4), rand(2, 4, 2)), lambda b, x, y, **k: b + (x @ y).sum(0))],
    "addr": [Case((rand(3, 4), rand(3), rand(4)), lambda b, u, v, **k: k.get("beta", 1) * b
                  + k.get("alpha", 1) * np.outer(u, v), kwargs={"alpha": 3})],
    "kron": [Case((rand(2, 3), rand(3, 2)), _kron), Case((rand(2, 2), rand(3)), _kron, label="ranks differ")],
    "tensordot": [Case((rand(2, 3, 4), rand(3, 4, 5)), lambda a, b: np.tensordot(a, b, 2)),
                  Case((rand(2, 3, 4), rand(4, 5, 2), [[0, 2], [2, 0]]),
                       lambda a, b, d: np.tensordot(a, b, (d[0], d[1])), label="dim lists"),
                  Case((rand(3, 4), rand(5), 0), lambda a, b, d: np.tensordot(a, b, 0), label="outer"),
                  Case((rand(2, 3, 4), rand(4, 5, 2), Int(np.array([[0, 2], [2, 0]]))),
                       lambda a, b, d: np.tensordot(a, b, (d[0], d[1])), label="dims tensor"),
                  Case((rand(2, 3, 4), rand(3, 4, 5), Int(np.array(2))), lambda a, b, d: np.tensordot(a, b, 2),
                       label="dims 0-d tensor")],
    "einsum": [Case(("ij,jk->ik", [rand(3, 4), rand(4, 2)]), lambda e, ts: np.einsum(e, *ts)),
               Case(("bij,bjk", [rand(2, 3, 4), rand(2, 4, 2)]), lambda e, ts: np.einsum(e, *ts), label="implicit"),
               Case(("...ij,...j->...i", [rand(2, 3, 4), rand(4)]), lambda e, ts: np.einsum(e, *ts),
                    label="ellipsis broadcast"),
               Case(("ii->i", [rand(3, 3)]), lambda e, ts: np.einsum(e, *ts), label="diagonal"),
               Case(("ij->", [transposed(3, 4)]), lambda e, ts: np.einsum(e, *ts), label="sum strided"),
               Case(("i j , j -> i", [rand(3, 1), rand(4)]), lambda e, ts: ts[0] @ np.ones((1, 4)) @ ts[1],
                    label="size-1 broadcast, spaces"),
               Case(("bn,anm,bm->ba", [rand(2, 3), rand(4, 3, 5), rand(2, 5)]), lambda e, ts: np.einsum(e, *ts),
                    label="three operands"),
               Case(("ij,ij->i", [rand(0, 3), rand(0, 3)]), lambda e, ts: np.einsum(e, *ts), label="empty")],
    "cross": [Case((rand(3, 4), rand(3, 4), 0), lambda a, b, d: np.cross(a, b, axis=d)),
              Case((rand(2, 3), rand(1, 3), 1), lambda a, b, d: np.cross(a, b, axis=d), label="broadcast")],
    "linalg_cross": [Case((rand(4, 3), rand(4, 3)), lambda a, b: np.cross(a, b), torch=_linalg("cross"))],
    "linalg_vecdot": [Case((rand(3, 4), rand(4)), lambda x, y: (x * y).sum(-1), torch=_linalg("vecdot")),
                      Case((rand(3, 4), rand(3, 1)), lambda x, y, dim: (x * y).sum(dim), kwargs={"dim": 0},
                           torch=_linalg("vecdot"), label="dim")],
    "linalg_multi_dot": [Case(([rand(3, 4), rand(4, 5), rand(5, 2)],), lambda ts: ts[0] @ ts[1] @ ts[2],
                              torch=_linalg("multi_dot")),
                         Case(([rand(4), rand(4, 3), rand(3)],), lambda ts: ts[0] @ ts[1] @ ts[2],
                              torch=_linalg("multi_dot"), label="vector ends")],
    "chain_matmul": [Case(([rand(3, 4), rand(4, 2)],), lambda ts: ts[0] @ ts[1],
                          torch=lambda torch, ts: torch.chain_matmul(*ts))],
    "diagonal": [Case((rand(3, 4),), _diagonal), Case((rand(3, 4), 1), _diagonal, label="offset"),
                 Case((rand(2, 3, 4), -1, 2, 0), _diagonal, label="dims negative offset"),
                 Case((transposed(4, 3), 5), _diagonal, label="past the end")],
    "linalg_diagonal": [Case((rand(2, 3, 3),), lambda a: np.diagonal(a, 0, -2, -1), torch=_linalg("diagonal"))],
    "diag": [Case((rand(3),), np.diag), Case((rand(3), -1), np.diag, label="1-d offset"),
             Case((rand(3, 4), 1), lambda a, k: np.diag(a, k).copy(), label="2-d offset")],
    "diag_embed": [Case((rand(2, 3),), _diag_embed), Case((rand(2, 3), 1, 0, 2), _diag_embed, label="offset dims")],
    "diagflat": [Case((rand(2, 2),), lambda a: np.diagflat(a)), Case((rand(3), -1), np.diagflat, label="offset")],
    "trace": [Case((rand(3, 4),), np.trace), Case((Int(rng.integers(0, 5, (3, 3))),), np.trace, grad=False,
                                                   label="int")],
    "linalg_vector_norm": [
        Case((rand(3, 4),), _vector_norm, torch=_linalg("vector_norm")),
        Case((rand(3, 4), 1, [1]), _vector_norm, torch=_linalg("vector_norm"), label="l1 dim"),
        Case((rand(3, 4), INF, [0], True), _vector_norm, torch=_linalg("vector_norm"), label="inf keepdim"),
        Case((rand(3, 4), -INF), _vector_norm, torch=_linalg("vector_norm"), label="-inf"),
        Case((rand(3, 4), 0, [1]), _vector_norm, torch=_linalg("vector_norm"), label="0", grad=False),
        Case((transposed(3, 4), 3.5, [0, 1]), _vector_norm, torch=_linalg("vector_norm"), label="p strided"),
        Case((rand(0, 3), 2, [0]), _vector_norm, torch=_linalg("vector_norm"), label="empty")],
    "linalg_matrix_norm": [
        Case((rand(3, 4),), _matrix_norm, torch=_linalg("matrix_norm")),
        Case((rand(2, 3, 4), "nuc"), _matrix_norm, torch=_linalg("matrix_norm"), label="nuc batched"),
        Case((rand(3, 4), 2), _matrix_norm, torch=_linalg("matrix_norm"), label="2"),
        Case((rand(3, 4), -2), _matrix_norm, torch=_linalg("matrix_norm"), label="-2"),
        Case((rand(3, 4), 1), _matrix_norm, torch=_linalg("matrix_norm"), label="1"),
        Case((rand(3, 4), -INF, [1, 0], True), _matrix_norm, torch=_linalg("matrix_norm"),
             label="-inf dims keepdim")],
    "linalg_norm": [Case((rand(3, 4),), lambda a: np.sqrt((a * a).sum()), torch=_linalg("norm")),
                    Case((rand(3, 4), INF), lambda a, o: _matrix_norm(a, o, (0, 1)), torch=_linalg("norm"),
                         label="matrix inf"),
                    Case((rand(3, 4), 3, [1]), lambda a, o, d: _vector_norm(a, o, d), torch=_linalg("norm"),
                         label="vector dim")],
    "norm": [Case((rand(3, 4),), lambda a: np.sqrt((a * a).sum())),
             Case((rand(3, 4), 2, [1], True), lambda a, p, d, k: _vector_norm(a, p, d, k), torch=_method("norm"),
                  label="forward_forward's x.norm(2, 1, keepdim=True)"),
             Case((rand(2, 3, 4), "nuc", [1, 2]), lambda a, p, d: _matrix_norm(a, p, d), label="nuc"),
             Case((rand(2, 3, 4), 1, [1, 2]), lambda a, p, d: _vector_norm(a, p, d), label="p over two dims"),
             Case((rand(2, 3), "fro", [1]), lambda a, p, d: _vector_norm(a, 2, d), label="fro one dim")],
    "dist": [Case((rand(3, 4), rand(4)), lambda a, b: _vector_norm(a - b)),
             Case((rand(3, 4), rand(3, 4), 1), lambda a, b, p: _vector_norm(a - b, p), label="p=1")],
    "cdist": [Case((rand(5, 3), rand(4, 3)), _cdist),
              Case((rand(2, 5, 3), rand(4, 3), 1.0), _cdist, label="p=1 batch broadcast"),
              Case((rand(5, 3), rand(4, 3), 3.0), _cdist, label="p=3"),
              Case((rand(5, 3), rand(4, 3), INF), _cdist, label="inf"),
              Case((rand(5, 3), rand(4, 3), 0.0), _cdist, label="p=0", grad=False)],
}


# --- solvers and decompositions ---------------------------------------------------------------

def square(*shape):
    """Well-conditioned square matrices: random plus n on the diagonal."""
    n = shape[-1]
    return rand(*shape) + n * np.eye(n)


def spd(*shape):
    a = rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def symmetric(*shape):
    a = rand(*shape)
    return (a + np.swapaxes(a, -1, -2)) / 2


def rank_deficient(m, n, rank):
    return rand(m, rank) @ rand(rank, n)


def _lu_ref(a):
    """Doolittle with partial pivoting, one matrix at a time: (LU, 1-based pivots)."""
    a = np.array(a, dtype=float)
    lead = a.shape[:-2]
    m, n = a.shape[-2:]
    lus, pivots = [], []
    for index in np.ndindex(*lead):
        lu = a[index].copy()
        piv = []
        for j in range(min(m, n)):
            p = j + int(np.argmax(np.abs(lu[j:, j])))
            piv.append(p + 1)
            lu[[j, p]] = lu[[p, j]]
            if lu[j, j] != 0:
                lu[j + 1:, j] /= lu[j, j]
            lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
        lus.append(lu)
        pivots.append(piv)
    return np.array(lus).reshape(a.shape), np.array(pivots, dtype=np.int32).reshape(lead + (min(m, n),))


def _lu_unpack_ref(a):
    lu, piv = _lu_ref(a)
    m, n = a.shape
    k = min(m, n)
    perm = list(range(m))
    for j, p in enumerate(piv):
        perm[j], perm[p - 1] = perm[p - 1], perm[j]
    p_matrix = np.zeros((m, m))
    p_matrix[perm, range(m)] = 1
    return p_matrix, np.tril(lu[:, :k], -1) + np.eye(m, k), np.triu(lu[:k])


def _symmetrize(a, *rest):
    return ((a + a.mT) / 2,) + rest


def _squared(*outputs):
    """Sign-free parts of a decomposition (columns of U and V are defined up to sign)."""
    return tuple(o * o for o in outputs)


def _svd_signfree(u, s, vh):
    return u * u, s, vh * vh


def _eigh_signfree(values, vectors):
    return values, vectors * vectors


def _lstsq_ref(a, b, rcond=None, driver=None):
    x = np.linalg.pinv(a) @ b
    residuals = ((a @ x - b) ** 2).sum(-2) if driver in ("gelsd", "gelss", "gels") else np.zeros(0)
    rank = np.linalg.matrix_rank(a) if driver != "gels" else np.zeros(0, dtype=np.int64)
    singular = np.linalg.svd(a, compute_uv=False) if driver in ("gelsd", "gelss") else np.zeros(0)
    return x, residuals, rank, singular


_A3, _B3 = square(3, 3), rand(3, 2)
_LU3, _PIV3 = _lu_ref(_A3)
_WIDE = rand(3, 5)
_LU_WIDE, _PIV_WIDE = _lu_ref(_WIDE)

CASES.update({
    "linalg_inv": [Case((square(3, 3),), np.linalg.inv, torch=_linalg("inv"), rtol=1e-4),
                   Case((square(2, 3, 3),), np.linalg.inv, torch=_linalg("inv"), rtol=1e-4, label="batched"),
                   Case((np.ascontiguousarray(square(4, 4)).T,), np.linalg.inv, torch=_linalg("inv"), rtol=1e-4,
                        label="transposed"),
                   Case((rand(0, 0),), np.linalg.inv, torch=_linalg("inv"), label="empty")],
    "inverse": [Case((square(3, 3),), np.linalg.inv, rtol=1e-4)],
    "linalg_inv_ex": [Case((square(2, 3, 3),), lambda a: (np.linalg.inv(a), np.zeros(2, np.int32)),
                           torch=_linalg("inv_ex"), rtol=1e-4)],
    "linalg_solve": [Case((square(3, 3), rand(3, 2)), np.linalg.solve, torch=_linalg("solve"), rtol=1e-4),
                     Case((square(2, 3, 3), rand(3)), lambda a, b: np.linalg.solve(a, b[:, None])[..., 0],
                          torch=_linalg("solve"), rtol=1e-4, label="vector broadcast"),
                     Case((square(3, 3), rand(2, 3)), lambda a, b, left: np.linalg.solve(a.T, b.T).T,
                          kwargs={"left": False}, torch=_linalg("solve"), rtol=1e-4, label="left=False")],
    "linalg_det": [Case((square(3, 3),), np.linalg.det, torch=_linalg("det"), rtol=1e-4),
                   Case((rank_deficient(3, 3, 2),), np.linalg.det, torch=_linalg("det"), atol=1e-4,
                        label="singular"),
                   Case((square(2, 2, 2),), np.linalg.det, torch=_linalg("det"), rtol=1e-4, label="batched")],
    "det": [Case((square(3, 3),), np.linalg.det, rtol=1e-4)],
    "linalg_slogdet": [Case((square(2, 3, 3) * np.array([1, -1])[:, None, None],), np.linalg.slogdet,
                            torch=_linalg("slogdet"), rtol=1e-4)],
    "slogdet": [Case((square(3, 3),), np.linalg.slogdet, rtol=1e-4)],
    "logdet": [Case((spd(3, 3),), lambda a: np.log(np.linalg.det(a)), rtol=1e-4)],
    "linalg_lu_factor": [Case((square(3, 3),), _lu_ref, torch=_linalg("lu_factor"), rtol=1e-4),
                         Case((rand(2, 4, 4),), _lu_ref, torch=_linalg("lu_factor"), rtol=1e-4, label="batched"),
                         Case((rand(4, 3),), _lu_ref, torch=_linalg("lu_factor"), rtol=1e-4, label="tall"),
                         Case((rand(2, 3, 5),), _lu_ref, torch=_linalg("lu_factor"), rtol=1e-4, label="wide")],
    "linalg_lu_factor_ex": [Case((square(3, 3),), lambda a: _lu_ref(a) + (np.zeros((), np.int32),),
                                 torch=_linalg("lu_factor_ex"), rtol=1e-4)],
    "linalg_lu": [Case((square(4, 4),), _lu_unpack_ref, torch=_linalg("lu"), rtol=1e-4),
                  Case((rand(3, 5),), _lu_unpack_ref, torch=_linalg("lu"), rtol=1e-4, label="wide"),
                  Case((rand(5, 3),), _lu_unpack_ref, torch=_linalg("lu"), rtol=1e-4, label="tall")],
    "lu_unpack": [Case((_LU3, Int(_PIV3)), lambda lu, piv: _lu_unpack_ref(_A3), rtol=1e-4),
                  Case((_LU_WIDE, Int(_PIV_WIDE)), lambda lu, piv: _lu_unpack_ref(_WIDE), rtol=1e-4, label="wide")],
    "linalg_lu_solve": [Case((_LU3, Int(_PIV3), _B3), lambda lu, p, b: np.linalg.solve(_A3, b),
                             torch=_linalg("lu_solve"), rtol=1e-4),
                        Case((_LU3, Int(_PIV3), _B3.T), lambda lu, p, b, left: np.linalg.solve(_A3.T, b.T).T,
                             kwargs={"left": False}, torch=_linalg("lu_solve"), rtol=1e-4, label="right"),
                        Case((_LU3, Int(_PIV3), _B3), lambda lu, p, b, adjoint: np.linalg.solve(_A3.T, b),
                             kwargs={"adjoint": True}, torch=_linalg("lu_solve"), rtol=1e-4, label="adjoint")],
    "matrix_power": [Case((rand(3, 3), 3), np.linalg.matrix_power, rtol=1e-4),
                     Case((square(2, 3, 3), -2), np.linalg.matrix_power, rtol=1e-4, label="negative batched"),
                     Case((rand(3, 3), 0), np.linalg.matrix_power, label="zero")],
    "linalg_matrix_power": [Case((rand(3, 3), 2), np.linalg.matrix_power, torch=_linalg("matrix_power"))],
    "linalg_cholesky": [Case((spd(3, 3),), np.linalg.cholesky, torch=_linalg("cholesky"), pre=_symmetrize,
                             rtol=1e-4),
                        Case((spd(2, 3, 3),), lambda a, upper: np.swapaxes(np.linalg.cholesky(a), -1, -2),
                             kwargs={"upper": True}, torch=_linalg("cholesky"), pre=_symmetrize, rtol=1e-4,
                             label="upper batched")],
    "cholesky": [Case((spd(3, 3),), np.linalg.cholesky, pre=_symmetrize, rtol=1e-4)],
    "linalg_matrix_exp": [Case((rand(3, 3),), _expm_ref, torch=_linalg("matrix_exp"), rtol=1e-4, atol=1e-5),
                          Case((rand(2, 4, 4) * 3,), _expm_ref, torch=_linalg("matrix_exp"), rtol=1e-4, atol=1e-4,
                               label="batched, squared")],
    "matrix_exp": [Case((rand(3, 3),), _expm_ref, rtol=1e-4, atol=1e-5),
                   Case((np.zeros((0, 0)),), _expm_ref, grad=False, label="empty")],
    "linalg_cholesky_ex": [Case((spd(3, 3),), lambda a: (np.linalg.cholesky(a), np.zeros((), np.int32)),
                                torch=_linalg("cholesky_ex"), pre=_symmetrize, rtol=1e-4)],
    "linalg_qr": [Case((rand(4, 3),), lambda a: np.linalg.qr(a), torch=_linalg("qr"), rtol=1e-4),
                  Case((rand(2, 3, 5), "complete"), lambda a, m: np.linalg.qr(a, m), torch=_linalg("qr"), rtol=1e-4,
                       label="wide complete batched"),
                  Case((rand(4, 3), "r"), lambda a, m: (np.zeros(0), np.linalg.qr(a, "r")), torch=_linalg("qr"),
                       rtol=1e-4, grad=False, label="r")],
    "qr": [Case((rand(4, 3),), lambda a: np.linalg.qr(a), rtol=1e-4)],
    "linalg_svd": [Case((rand(4, 3), False), lambda a, f: np.linalg.svd(a, full_matrices=f), torch=_linalg("svd"),
                        post=_svd_signfree, rtol=1e-4, atol=1e-4),
                   Case((rand(2, 3, 5), False), lambda a, f: np.linalg.svd(a, full_matrices=f), torch=_linalg("svd"),
                        post=_svd_signfree, rtol=1e-4, atol=1e-4, label="wide batched"),
                   Case((rand(3, 3),), np.linalg.svd, torch=_linalg("svd"), post=_svd_signfree, rtol=1e-4, atol=1e-4,
                        label="full square")],
    "svd": [Case((rand(4, 3),), lambda a: _torch_svd_ref(a), post=_svd_signfree, rtol=1e-4, atol=1e-4)],
    "linalg_svdvals": [Case((rand(4, 3),), lambda a: np.linalg.svd(a, compute_uv=False), torch=_linalg("svdvals"),
                            rtol=1e-4)],
    "linalg_eigh": [Case((symmetric(4, 4),), np.linalg.eigh, torch=_linalg("eigh"), pre=_symmetrize,
                         post=_eigh_signfree, rtol=1e-4, atol=1e-4),
                    Case((symmetric(2, 3, 3), "U"), lambda a, u: np.linalg.eigh(a, u), torch=_linalg("eigh"),
                         pre=_symmetrize, post=_eigh_signfree, rtol=1e-4, atol=1e-4, label="upper batched")],
    "linalg_eigvalsh": [Case((symmetric(4, 4),), np.linalg.eigvalsh, torch=_linalg("eigvalsh"), pre=_symmetrize,
                             rtol=1e-4, atol=1e-4)],
    "linalg_pinv": [Case((rand(3, 4),), np.linalg.pinv, torch=_linalg("pinv"), rtol=1e-4, atol=1e-4),
                    Case((rand(2, 5, 3),), np.linalg.pinv, torch=_linalg("pinv"), rtol=1e-4, atol=1e-4,
                         label="tall batched"),
                    Case((symmetric(4, 4),), lambda a, hermitian: np.linalg.pinv(a, hermitian=True),
                         kwargs={"hermitian": True}, torch=_linalg("pinv"), pre=_symmetrize, rtol=1e-4, atol=1e-4,
                         label="hermitian"),
                    Case((rank_deficient(4, 4, 2),), lambda a, rtol: np.linalg.pinv(a, rcond=1e-3),
                         kwargs={"rtol": 1e-3}, torch=_linalg("pinv"), rtol=1e-3, atol=1e-3, grad=False,
                         label="rank-deficient rtol")],
    "pinverse": [Case((rand(3, 4),), np.linalg.pinv, rtol=1e-4, atol=1e-4)],
    "linalg_matrix_rank": [Case((rank_deficient(4, 5, 2),), np.linalg.matrix_rank, torch=_linalg("matrix_rank")),
                           Case((rand(2, 3, 3),), np.linalg.matrix_rank, torch=_linalg("matrix_rank"),
                                label="batched"),
                           Case((symmetric(3, 3),), lambda a, hermitian: np.linalg.matrix_rank(a),
                                kwargs={"hermitian": True}, torch=_linalg("matrix_rank"), label="hermitian"),
                           Case((rank_deficient(3, 3, 1) + 1e-3 * rand(3, 3),), lambda a, atol: 1,
                                kwargs={"atol": 0.1}, torch=_linalg("matrix_rank"), label="atol")],
    "linalg_lstsq": [Case((rand(5, 3), rand(5, 2)), _lstsq_ref, torch=_linalg("lstsq"), rtol=1e-4, atol=1e-4),
                     Case((rand(5, 3), rand(5, 2)), lambda a, b, driver: _lstsq_ref(a, b, None, driver),
                          kwargs={"driver": "gelsd"}, torch=_linalg("lstsq"), rtol=1e-4, atol=1e-4,
                          label="gelsd residuals"),
                     Case((rand(2, 4, 3), rand(2, 4)), lambda a, b: ((np.linalg.pinv(a) @ b[..., None])[..., 0],
                                                                     np.zeros(0),
                                                                  np.linalg.matrix_rank(a), np.zeros(0)),
                          torch=_linalg("lstsq"), rtol=1e-4, atol=1e-4, label="vector batched")],
})


def _eig_phase_free(values, vectors):
    """Eigenvalues, and |V|^2: unit eigenvectors are defined up to a complex phase."""
    return values, (vectors * vectors.conj()).real


CASES.update({
    "linalg_eig": [Case((square(3, 3),), np.linalg.eig, torch=_linalg("eig"), post=_eig_phase_free, rtol=1e-4,
                        atol=1e-4),
                   Case((np.array([[1.0, -2.0], [3.0, 0.5]]),), np.linalg.eig, torch=_linalg("eig"),
                        post=_eig_phase_free, rtol=1e-4, atol=1e-4, label="complex eigenvalues")],
    "linalg_eigvals": [Case((rand(2, 3, 3),), np.linalg.eigvals, torch=_linalg("eigvals"), rtol=1e-4, atol=1e-4)],
})


def _torch_svd_ref(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u, s, vh.T


def _coo_dense(indices, values, size):
    out = np.zeros(size)
    np.add.at(out, tuple(indices), values)
    return out


CASES.update({
    "sparse_coo_tensor": [
        Case((Int(np.array([[0, 2, 0], [1, 0, 1]])), rand(3), [3, 2]), _coo_dense,
             torch=lambda torch, i, v, size: torch.sparse_coo_tensor(i, v, size).to_dense(),
             label="repeated index adds"),
        Case((Int(np.array([[1, 0]])), rand(2, 3), [2, 3]), _coo_dense,
             torch=lambda torch, i, v, size: torch.sparse_coo_tensor(i, v, size).to_dense(), label="hybrid")],
    "spmm": [Case((rand(3, 4), rand(4, 2)), np.matmul)],
})


def _triangular_ref(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.diag(np.diag(t)) + np.eye(t.shape[-1])
    return np.linalg.solve(t, b) if left else np.linalg.solve(t.T, b.T).T


def _well_conditioned(*shape):
    return rand(*shape) + 4 * np.eye(shape[-1])


CASES.update({
    "linalg_solve_triangular": [
        Case((_well_conditioned(3, 3), rand(3, 2)), _triangular_ref, kwargs={"upper": True},
             torch=_linalg("solve_triangular"), rtol=1e-4),
        Case((_well_conditioned(3, 3), rand(2, 3)), _triangular_ref, kwargs={"upper": False, "left": False},
             torch=_linalg("solve_triangular"), rtol=1e-4, label="lower right"),
        Case((_well_conditioned(3, 3), rand(3, 4)), _triangular_ref, kwargs={"upper": True, "unitriangular": True},
             torch=_linalg("solve_triangular"), rtol=1e-4, label="unit")],
})


def _dominant_symmetric(*shape):
    """Symmetric matrices dominant enough that Bunch-Kaufman never pivots."""
    a = rand(*shape)
    return (a + np.swapaxes(a, -1, -2)) / 2 + 3 * shape[-1] * np.eye(shape[-1])


def _unpivoted_ldl(a, **flags):
    """LD and pivots of a matrix sytrf does not pivot, from its Cholesky factor C: D = diag(C)^2, L = C / diag(C)."""
    c = np.linalg.cholesky(a)
    d = np.diagonal(c, axis1=-2, axis2=-1)
    ld = np.tril(c / d[..., None, :], -1) + d[..., None, :] ** 2 * np.eye(a.shape[-1])
    return ld, np.broadcast_to(np.arange(1, a.shape[-1] + 1, dtype=np.int32), a.shape[:-1])


# A matrix whose factorization takes a 2x2 pivot with an interchange (LD and pivots as PyTorch gives them).
_LDL_A = np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]])
_LDL_LD = np.array([[0.0, 0, 0], [2, 0, 0], [1.5, 0.5, -3]])
_LDL_PIVOTS = np.array([-3, -3, 3], dtype=np.int32)

CASES.update({
    "linalg_ldl_factor": [Case((_dominant_symmetric(4, 4),), _unpivoted_ldl, grad=False, torch=_linalg("ldl_factor"),
                               rtol=1e-4),
                          Case((_dominant_symmetric(2, 3, 3),), _unpivoted_ldl, grad=False, kwargs={"hermitian": True},
                               torch=_linalg("ldl_factor"), rtol=1e-4, label="batched hermitian"),
                          Case((_LDL_A,), lambda a: (_LDL_LD, _LDL_PIVOTS), grad=False, torch=_linalg("ldl_factor"),
                               label="2x2 pivot")],
    "linalg_ldl_factor_ex": [Case((_dominant_symmetric(3, 3),), lambda a: _unpivoted_ldl(a) + (np.zeros((), np.int32),),
                                  grad=False, torch=_linalg("ldl_factor_ex"), rtol=1e-4)],
    "linalg_ldl_solve": [Case((_LDL_LD, Int(_LDL_PIVOTS), rand(3, 2)), lambda ld, p, b: np.linalg.solve(_LDL_A, b),
                              grad=False, torch=_linalg("ldl_solve"), rtol=1e-4),
                         Case((_LDL_LD, Int(_LDL_PIVOTS), rand(2, 3, 1)), lambda ld, p, b: np.linalg.solve(_LDL_A, b),
                              grad=False, torch=_linalg("ldl_solve"), rtol=1e-4, label="broadcast b")],
})


def _r_magnitudes(a, tau):
    """|R| from geqrf's packed result: R is unique up to the signs of its rows."""
    return (abs(a.triu()) if hasattr(a, "triu") else np.abs(np.triu(a)),)


def _geqrf_ref(a):
    return np.linalg.qr(a, mode="complete")[1], None


CASES.update({
    "geqrf": [Case((rand(4, 3),), _geqrf_ref, grad=False, post=_r_magnitudes, rtol=1e-4, atol=1e-5),
              Case((rand(2, 3, 5),), _geqrf_ref, grad=False, post=_r_magnitudes, rtol=1e-4, atol=1e-5, label="wide"),
              Case((rand(0, 3),), _geqrf_ref, grad=False, post=_r_magnitudes, label="empty")],
})
