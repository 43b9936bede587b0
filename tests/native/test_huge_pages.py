"""Arrays on 2 MB pages (native/huge_pages.py): copies that equal their source, never overlap, start
on a cache line, and live in memory marked for huge pages where the kernel has them."""

from __future__ import annotations

import os

import numpy as np
import pytest

from scriptc.native import huge_pages
from scriptc.native.huge_pages import huge_page_copy


def test_copies_equal_their_source_and_never_share_memory(monkeypatch):
    monkeypatch.setattr(huge_pages, "CHUNK_BYTES", 1 << 16)  # (small chunks: copies that need a new one)
    monkeypatch.setattr(huge_pages, "_chunk", None)
    rng = np.random.default_rng(0)
    sources = [rng.standard_normal(shape).astype(dtype) for shape, dtype in
               (((3, 5), np.float32), ((1000,), np.float64), ((7,), np.float32), ((300, 100), np.float32),
                ((1,), np.float64), ((2, 3, 4), np.float32))]
    copies = [huge_page_copy(a) for a in sources]
    for a, c in zip(sources, copies):
        assert c.shape == a.shape and c.dtype == a.dtype and c.flags.c_contiguous and c.flags.writeable
        assert c.ctypes.data % huge_pages.ALIGNMENT == 0
        np.testing.assert_array_equal(c, a)
    for i, c in enumerate(copies):
        c[...] = -1  # (writing one copy leaves every other as it was)
        assert all(np.array_equal(copies[j], sources[j]) for j in range(len(copies)) if j != i)
        c[...] = sources[i]


def test_a_copy_of_a_strided_or_empty_array():
    a = np.arange(24.0).reshape(4, 6)[:, ::2]
    np.testing.assert_array_equal(huge_page_copy(a), a)
    assert huge_page_copy(np.zeros((0, 3), np.float32)).shape == (0, 3)


@pytest.mark.skipif(not os.path.exists("/sys/kernel/mm/transparent_hugepage") or not huge_pages._SUPPORTED,
                    reason="no transparent huge pages here")
def test_copies_live_in_memory_marked_for_huge_pages():
    c = huge_page_copy(np.ones(1 << 18, np.float32))
    address = c.ctypes.data
    with open("/proc/self/smaps") as smaps:
        lines = smaps.read().splitlines()
    for i, line in enumerate(lines):
        fields = line.split()
        if "-" in fields[0] and ":" not in fields[0]:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                flags = next(s for s in lines[i + 1:] if s.startswith("VmFlags:")).split()[1:]
                assert "hg" in flags  # (MADV_HUGEPAGE)
                return
    pytest.fail("the copy's memory is not in /proc/self/smaps")
