"""Eager indexing read and written as torch 2.13 does: a list index holding sequences, tensors, slices,
None or Ellipsis is a tuple of indices (torch's deprecated legacy rule, with its warning); a flat list
of ints stays one index tensor."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

SOURCES = ["x[[[0, 1], [1, 0]]]", "x[[0, slice(None)]]", "x[[None, 0]]", "x[[T.tensor(1), 0]]", "x[[0, [1, 2]]]",
           "x[[Ellipsis, 1]]", "x[[0, 1]]", "x[np.array([[0, 1], [1, 0]])]"]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("source", SOURCES)
def test_list_indices_read_as_torch_reads_them(source):
    def run(T):
        return eval(source, {"T": T, "np": np, "x": T.arange(6.0).reshape(2, 3)}).tolist()

    assert run(scriptc) == run(torch)


def test_a_list_of_lists_written_is_a_tuple_of_indices_with_torchs_warning():
    def run(T):
        x = T.arange(6.0).reshape(2, 3)
        with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
            x[[[0, 1], [1, 0]]] = 9.0
        return x.tolist()

    assert run(scriptc) == run(torch)
