"""Tensor's linear-algebra methods that torch keeps beside torch.linalg (lu, lu_solve, triangular_solve,
orgqr, ormqr); scriptc/linalg_composites.py computes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor


class LinalgMethods:
    """These methods of scriptc.Tensor (a mixin: Tensor is the only class built on it)."""

    __slots__ = ()

    def lu(self, pivot: bool = True, get_infos: bool = False):
        from scriptc import linalg_composites

        return linalg_composites.lu(self, pivot, get_infos)

    def lu_solve(self, LU_data: "Tensor", LU_pivots: "Tensor") -> "Tensor":
        from scriptc import linalg_composites

        return linalg_composites.lu_solve(self, LU_data, LU_pivots)

    def triangular_solve(self, A: "Tensor", upper: bool = True, transpose: bool = False,
                         unitriangular: bool = False):
        from scriptc import linalg_composites

        return linalg_composites.triangular_solve(self, A, upper, transpose, unitriangular)

    def orgqr(self, input2: "Tensor") -> "Tensor":
        from scriptc import linalg_composites

        return linalg_composites.householder_product(self, input2)

    def ormqr(self, input2: "Tensor", input3: "Tensor", left: bool = True, transpose: bool = False) -> "Tensor":
        from scriptc import linalg_composites

        return linalg_composites.ormqr(self, input2, input3, left, transpose)
