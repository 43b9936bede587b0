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
                  Case((rand(3, 4), rand(5), 0), lambda a, b, d: np.tensordot(a, b, 0), label="outer")],
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
