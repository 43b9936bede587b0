"""The streaming row gather of DataLoader workers (native/row_gather.py): the rows numpy's take
gives, negative positions counted from the end, for rows of one cache line and of many."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc.native import row_gather

pytestmark = pytest.mark.skipif(not row_gather.available(), reason="streaming stores are x86-64 only")


def _aligned(nbytes: int) -> np.ndarray:
    """A zeroed uint8 buffer of nbytes starting on a 64-byte boundary."""
    raw = np.zeros(nbytes + 64, np.uint8)
    start = -raw.__array_interface__["data"][0] % 64
    return raw[start:start + nbytes]


@pytest.mark.parametrize("dtype, width", [(np.float32, 16), (np.float64, 24), (np.int16, 2048)])
def test_rows_are_the_rows_take_gives(dtype, width):
    rng = np.random.default_rng(width)
    source = rng.integers(-1000, 1000, size=(97, width)).astype(dtype)
    positions = rng.integers(-97, 97, size=300, dtype=np.int64)  # repeats, and negatives from the end
    out = _aligned(300 * source.strides[0]).view(dtype).reshape(300, width)
    row_gather.gather_rows()(source.__array_interface__["data"][0], positions.__array_interface__["data"][0],
                             len(positions), len(source), source.strides[0], out.__array_interface__["data"][0])
    np.testing.assert_array_equal(out, source.take(positions, axis=0, mode="wrap"))


def test_no_rows_write_nothing():
    source = np.ones((4, 16), np.float32)
    out = _aligned(64)
    positions = np.zeros(1, np.int64)
    row_gather.gather_rows()(source.__array_interface__["data"][0], positions.__array_interface__["data"][0], 0,
                             4, 64, out.__array_interface__["data"][0])
    assert not out.any()
