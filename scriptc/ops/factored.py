"""A gradient kept as the two factors of a matrix product, so that autograd sums many as one product.

`linear`'s weight gradient is g.T @ x, one product per call. A weight used at every step of a
recurrence receives one per step, each a product over only a batch of rows (20 in the word language
model) that writes a whole weight-sized result, which is then added into the running sum. The sum
is one product of the stacked factors, [g_1; ...; g_T].T @ [x_1; ...; x_T], which BLAS runs several
times faster than T thin ones. A gradient formula returns a `FactoredGradient` for such an input;
autograd collects the factors of every gradient that reaches the same tensor and multiplies once.
"""

from __future__ import annotations


class FactoredGradient:
    """left.T @ right, not multiplied yet: left (rows, m) and right (rows, n) of one dtype, arrays
    of the array module `xp`."""

    __slots__ = ("xp", "left", "right")

    def __init__(self, xp, left, right):
        self.xp, self.left, self.right = xp, left, right

    @property
    def shape(self) -> tuple:
        return (self.left.shape[1], self.right.shape[1])

    @property
    def dtype(self):
        return self.left.dtype

    @property
    def factor_size(self) -> int:
        """The elements the factors hold (the product holds m * n)."""
        return self.left.size + self.right.size

    def evaluate(self):
        return self.left.T @ self.right


def product_of_stacked(factors: list[FactoredGradient]):
    """The sum of the factored gradients' products, as one product of their stacked factors."""
    if len(factors) == 1:
        return factors[0].evaluate()
    xp = factors[0].xp
    return xp.concatenate([f.left for f in factors]).T @ xp.concatenate([f.right for f in factors])
