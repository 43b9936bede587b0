"""torch.where(condition): one index tensor per dim, a tuple in eager code and a List[Tensor] in
scripted code (as TorchScript's)."""

from __future__ import annotations

import numpy as np

import scriptc as torch


def _positions(condition):
    return torch.where(condition)


def test_where_of_a_condition_gives_one_index_tensor_per_dim():
    condition = torch.tensor([[False, True], [True, False]])
    eager = _positions(condition)
    scripted = torch.jit.script(_positions)(condition)
    assert isinstance(eager, tuple) and isinstance(scripted, list)
    for got in (eager, scripted):
        assert [t.tolist() for t in got] == [[0, 1], [1, 0]] and all(t.dtype == torch.int64 for t in got)


def test_where_of_a_0d_condition_counts_it_as_one_dim():
    for flag, expected in ((True, [0]), (False, [])):
        (positions,) = torch.where(torch.tensor(flag))
        assert positions.tolist() == expected


def test_where_positions_index_the_condition_back():
    x = torch.tensor(np.array([[0.1, 0.7, 0.9], [0.8, 0.2, 0.6]], dtype=np.float32))
    rows, cols = torch.jit.script(_positions_over_half)(x)
    np.testing.assert_array_equal(x[rows, cols].numpy(), x.numpy()[x.numpy() > 0.5])


def _positions_over_half(x):
    return torch.where(x > 0.5)
