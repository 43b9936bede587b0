"""as_strided against torch: the storage it reads (a view's, an arena value's), its offset, and its
gradient after the view is written in place."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def test_the_result_keeps_the_storage_offset_of_the_view_it_came_from():
    for T in (scriptc, torch):
        rows = T.arange(12.0).reshape(3, 4)[1:]
        view = rows.as_strided((2, 2), (4, 1))
        assert (view.storage_offset(), view.tolist()) == (4, [[4.0, 5.0], [8.0, 9.0]])
        assert view.as_strided((2,), (1,), 9).tolist() == [9.0, 10.0]


def test_backward_after_an_in_place_write_through_the_view():
    grads = []
    for T in (scriptc, torch):
        x = T.zeros(6, dtype=T.float64, requires_grad=True)
        y = x.clone()
        y.as_strided((2,), (2,), 1).mul_(3)
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


class _Strided(scriptc.nn.Module):
    def forward(self, x):
        y = x + 1  # a value of its own: its storage starts at its first element, wherever it lives
        tail = x[1:]  # a view of the input: its storage is the input's
        return y.as_strided((3,), (2,), 0) * 2, y.as_strided((2, 2), (1, 1)) * 3, tail.as_strided((2,), (3,)) + 0


@pytest.mark.parametrize("size", [8, 12])
def test_a_loaded_archive_reads_each_value_as_its_own_storage(tmp_path, size):
    model = _Strided()
    traced = scriptc.jit.trace(model, (scriptc.arange(8.0),))
    scriptc.jit.save(traced, str(tmp_path / "strided.sc"))
    loaded = scriptc.runtime.load(str(tmp_path / "strided.sc"))
    data = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    expected = [t.numpy() for t in torch.nn.Module.__call__(_TorchStrided(), torch.tensor(data))]
    for got, want in zip(loaded(data), expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


class _TorchStrided(torch.nn.Module):
    forward = _Strided.forward
