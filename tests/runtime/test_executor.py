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
