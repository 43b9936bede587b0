"""Ops that move or mask elements by position: tril/triu, flips and rolls, repeats and tiles, stacking."""

from __future__ import annotations

from . import register
from .schema import OPAQUE


def _triangle(name: str, lower: bool):
    def kernel(xp, x, diagonal=0):
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return (xp.tril if lower else xp.triu)(x, diagonal)

    def grad(ctx, g):
        return ((ctx.xp.tril if lower else ctx.xp.triu)(g, ctx.diagonal), None)

    register(f"{name}(self: Tensor, diagonal: int = 0) -> Tensor", OPAQUE, kernel, shape=lambda x, diagonal=0: x,
             grad=grad, inplace=True,
             doc=f"The {'lower' if lower else 'upper'} triangle of the last two dims (from `diagonal`), "
                 "the rest zero.")


_triangle("tril", lower=True)
_triangle("triu", lower=False)
