"""Ops that give a new tensor in torch (not a view) must not share the input's memory: a write into
the result would otherwise change the input (numpy's flip and rot90 are views)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("program", [
    lambda x: x.flip(0), lambda x: x.flip(0, 1), lambda x: x.fliplr(), lambda x: x.flipud(),
    lambda x: x.rot90(), lambda x: x.rot90(2), lambda x: x.rot90(4), lambda x: x.rot90(-1, [1, 0]),
], ids=["flip", "flip2", "fliplr", "flipud", "rot90", "rot180", "rot360", "rot90_back"])
def test_writing_into_a_fresh_result_leaves_the_input_alone(program):
    data = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    results = []
    for T in (scriptc, torch):
        x = T.tensor(data)
        out = program(x)
        out.add_(1)
        results.append((x.numpy().copy(), out.numpy().copy(), out.storage_offset()))
    np.testing.assert_array_equal(results[0][0], data)
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]
