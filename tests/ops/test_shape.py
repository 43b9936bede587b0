"""Ops of scriptc/ops/shape.py: what their gradients keep from the call."""

import numpy as np
import pytest

import scriptc


def _accumulate_rows(lib, rows, index, values):
    # mistral-src's MoE layer: results[batch_idx] += weights * expert(inputs[batch_idx])
    results = lib.zeros_like(rows)
    results[index] += values * rows[index]
    return results


def test_index_gradient_survives_a_write_to_the_indexed_tensor():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    rows, values = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    index = rng.integers(0, 6, 4)
    grads = []
    for lib in (torch, scriptc):
        x = lib.tensor(rows, requires_grad=True)
        out = _accumulate_rows(lib, x * 2, lib.tensor(index), lib.tensor(values))
        out.pow(2).sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)


def test_index_gradient_keeps_the_indices_version():
    x = scriptc.randn(5, 2, requires_grad=True)
    index = scriptc.tensor([0, 3])
    out = (x * 1)[index]
    index.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
