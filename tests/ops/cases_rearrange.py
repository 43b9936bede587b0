"""Cases for ops that move or mask elements by position (rearrange.py)."""

from __future__ import annotations

import numpy as np

from .cases import Case, Int, noncontig, rand, rng

CASES = {
    "tril": [Case((rand(4, 5),), np.tril),
             Case((rand(2, 3, 4), -1), lambda x, d: np.tril(x, d), label="batched, below"),
             Case((noncontig(5, 3), 2), lambda x, d: np.tril(x, d), label="transposed, above"),
             Case((Int(rng.integers(0, 9, (3, 3))),), np.tril, grad=False, label="int"),
             Case((rand(0, 3),), np.tril, label="empty")],
    "triu": [Case((rand(4, 5),), np.triu),
             Case((rand(2, 3, 4), 1), lambda x, d: np.triu(x, d), label="batched, above"),
             Case((noncontig(5, 3), -2), lambda x, d: np.triu(x, d), label="transposed, below")],
}
