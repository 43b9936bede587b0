"""The running sum of the gradients that reach one tensor during a backward pass."""

from __future__ import annotations

from scriptc.ops.factored import FactoredGradient as _FactoredGradient
from scriptc.ops.factored import product_of_stacked as _product_of_stacked

# Factors are multiplied once they hold this many times the product's elements: the longer the stacked
# GEMM the faster BLAS runs it (a weight's whole 35-step window at word_language_model's size is one),
# while the memory the factors hold stays a small multiple of the weight's.
_FACTORS_PER_PRODUCT = 4


class GradSum:
    """The running sum of the gradients that reach one tensor. The first array is kept as given (a
    formula may have passed the same array on to several inputs); the second makes a sum this object
    owns, and later ones are added into it in place. Factored gradients (a weight's g.T @ x from each
    step of a recurrence) are kept as factors and multiplied as one product of the stacked factors
    when the sum is read, or sooner when the factors grow a few times larger than the product."""

    __slots__ = ("dense", "owned", "factors", "factor_size")

    def __init__(self, g):
        self.dense, self.owned, self.factors, self.factor_size = None, False, [], 0
        self.add(g)

    def add(self, g) -> None:
        if type(g) is not _FactoredGradient:
            self._add_dense(g, owned=False)
            return
        self.factors.append(g)
        self.factor_size += g.factor_size
        if self.factor_size >= _FACTORS_PER_PRODUCT * g.shape[0] * g.shape[1]:
            self._multiply_factors()

    @property
    def value(self):
        if self.factors:
            self._multiply_factors()
        return self.dense

    def _multiply_factors(self) -> None:
        product = _product_of_stacked(self.factors)
        self.factors, self.factor_size = [], 0
        self._add_dense(product, owned=True)

    def _add_dense(self, g, owned: bool) -> None:
        if self.dense is None:
            self.dense, self.owned = g, owned
        elif self.owned:
            self.dense += g
        else:
            self.dense, self.owned = self.dense + g, True
