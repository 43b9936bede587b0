"""torch.linalg.solve_triangular: X with A X = B (or X A = B) for triangular A, by substitution."""

from __future__ import annotations

from . import register
from .linalg_solve import known_dims, solve_triangular
from .matrix import mH, out_type, torch_name
from .rules import broadcast_shapes
from .schema import OPAQUE

_NAME = "linalg.solve_triangular"


def _check(a, b, left):
    if a.dtype.kind not in "fc":
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{torch_name(a.dtype)}'")
    if b.ndim < 2:
        raise RuntimeError(f"{_NAME}: The input tensor B must have at least 2 dimensions.")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{_NAME}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{_NAME}: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")


def _solve(xp, a, b, upper, left, unitriangular):
    """A^{-1} B, or B A^{-1} as (A^H)^{-1} B^H transposed back (A^H has the other triangle)."""
    if left:
        return solve_triangular(xp, a, b, lower=not upper, unit=unitriangular)
    return mH(solve_triangular(xp, mH(a), mH(b), lower=upper, unit=unitriangular))


def _kernel(xp, a, b, upper, left=True, unitriangular=False):
    _check(a, b, left)
    triangle = xp.triu(a) if upper else xp.tril(a)
    # torch computes in A's dtype
    return _solve(xp, triangle, b.astype(a.dtype, copy=False), upper, left, unitriangular)


def _grad(ctx, g):
    """dB = A^{-H} G (left) or G A^{-H} (right); dA = -dB X^H (left) or -X^H dB (right), kept to A's triangle
    (strictly, when unitriangular: the diagonal is not read)."""
    xp, upper, left, unit = ctx.xp, ctx.upper, ctx.left, ctx.unitriangular
    a, x = ctx.A, ctx.out
    triangle = xp.triu(a) if upper else xp.tril(a)
    g_b = _solve(xp, mH(triangle), g, not upper, left, unit)
    g_a = -g_b @ mH(x) if left else -mH(x) @ g_b
    offset = 1 if upper else -1
    g_a = (xp.triu(g_a, offset if unit else 0) if upper else xp.tril(g_a, offset if unit else 0))
    return g_a, g_b, None, None, None


def _rule(a, b, upper, left=True, unitriangular=False):
    if not (known_dims(a) and known_dims(b)):
        return out_type(a, None)
    return out_type(a, broadcast_shapes(a.shape[:-2], b.shape[:-2]) + tuple(b.shape[-2:]))


register("linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, "
         "unitriangular: bool = False) -> Tensor", OPAQUE, _kernel, shape=_rule, grad=_grad, save=("A", "out"),
         complex_aware=True, method=False, function=False,
         doc="The solution X of A X = B (X A = B when left=False) for upper or lower triangular A (only that "
             "triangle is read; its diagonal taken as ones when unitriangular), batched and broadcast.")
