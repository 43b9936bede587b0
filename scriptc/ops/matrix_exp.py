"""matrix_exp (torch.linalg.matrix_exp, torch.matrix_exp): exp(A) = sum A^k / k! of square matrices, by
scaling and squaring; its gradient is the Frechet derivative, read off the exponential of a block matrix."""

from __future__ import annotations

import math

from . import register
from .matrix import mH, out_type, require_floating, require_matrix
from .schema import OPAQUE

_NAME = "linalg.matrix_exp"
_TERMS = 18  # Taylor terms once the norm is at most 1/2: the remainder is below 2^-19 / 19!, under any eps


def _exp(xp, a):
    """exp of each square matrix in a (batched)."""
    if a.shape[-1] == 0:
        return a.copy()
    norms = xp.abs(a).sum(axis=-2).max(axis=-1)  # the 1-norm bounds the spectral radius
    top = float(norms.max()) if norms.size else 0.0
    squarings = max(0, math.ceil(math.log2(top)) + 1) if top > 0.5 else 0
    scaled = a / (2.0 ** squarings)
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    result, term = eye.copy(), eye.copy()
    for k in range(1, _TERMS + 1):
        term = term @ scaled / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def _kernel(xp, a):
    require_matrix(a, _NAME, square=True)
    require_floating(a, _NAME)
    return _exp(xp, a)


def _frechet(xp, a, g):
    """d<G, exp(A)> / dA is the upper-right block of exp([[A^H, G], [0, A^H]])."""
    n = a.shape[-1]
    block = xp.zeros(a.shape[:-2] + (2 * n, 2 * n), dtype=xp.result_type(a, g))
    block[..., :n, :n] = mH(a)
    block[..., n:, n:] = mH(a)
    block[..., :n, n:] = g
    return _exp(xp, block)[..., :n, n:]


def _rule(a):
    return out_type(a, a.shape)


register("linalg_matrix_exp(A: Tensor) -> Tensor", OPAQUE, _kernel, shape=_rule,
         grad=lambda ctx, g: (_frechet(ctx.xp, ctx.A, g),), save=("A",),
         complex_aware=True, method=False, function=False, doc="exp(A) of square matrices A (batched).")
register("matrix_exp(self: Tensor) -> Tensor", OPAQUE, _kernel, shape=_rule,
         grad=lambda ctx, g: (_frechet(ctx.xp, ctx.self, g),), save=("self",),
         complex_aware=True, doc="exp(A) of square matrices (torch.linalg.matrix_exp).")
