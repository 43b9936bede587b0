"""The executor's own helpers, against what they stand in for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptc.runtime.groups import broadcast_shape

_shapes = st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=4).map(tuple), max_size=4)


@settings(deadline=None)  # as the suite's other property tests: CI machines stall
@given(_shapes)
def test_broadcast_agrees_with_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        expected = None
    assert broadcast_shape(shapes) == expected


_EPILOGUE = """graph(%x : Tensor(float32, [B, 12]), %w : Tensor(float32, [12, 32])):
  %y : Tensor(RESULT, [B, 32]) = prim::FusionGroup[kind="epilogue", guard=[["float32", 2, []], ["float32", 2, []]]](%x, %w)
    block0(%a : Tensor(float32, [B, 12]), %b : Tensor(float32, [12, 32])):
      %m : Tensor(RESULT, [B, 32]) = matmul(%a, %b)
      %r : Tensor(RESULT, [B, 32]) = relu(%m)
      -> (%r)
  return (%y)
"""


def test_a_group_guards_what_its_head_reads_and_returns():
    """A group whose IR says its matmul head returns float64 while the head computes float32: the
    kernel compiled to read float64 must not run on the head's float32 result (it read garbage, and
    past the buffer's end for 100,000 rows); the group runs unfused, as the reference does."""
    from scriptc.ir.parser import parse
    from scriptc.runtime.executor import Executor

    rng = np.random.default_rng(0)
    w = rng.standard_normal((12, 32)).astype(np.float32)
    for result in ("float64", "float32"):
        executor = Executor(parse(_EPILOGUE.replace("RESULT", result)), threads=1)
        assert executor.compiled_groups == 1
        for rows in (64, 100_000):
            x = rng.standard_normal((rows, 12)).astype(np.float32)
            (y,) = executor([x, w])
            np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
        # float64 inputs, where the head was fused for float32: unfused, float64 all through.
        (y,) = executor([x.astype(np.float64), w.astype(np.float64)])
        assert y.dtype == np.float64
        np.testing.assert_allclose(y, np.maximum(x.astype(np.float64) @ w, 0), rtol=1e-5, atol=1e-5)
