"""torch.functional's einsum sublist form, against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)


def _both(*shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    return [scriptc.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("shapes, sublists", [
    (((2, 3), (3, 4)), ([0, 1], [1, 2], [0, 2])),
    (((2, 3), (3, 4)), ([0, 1], [1, 2])),
    (((5, 2, 3), (3, 4)), ([Ellipsis, 1], [1, 2], [Ellipsis, 2])),
    (((2, 4), (4, 5)), ([27, 3], [3, 51], [51, 27])),
])
def test_sublist_form_matches_torch(shapes, sublists):
    ours, theirs = _both(*shapes)
    args_ours = [x for pair in zip(ours, sublists) for x in pair] + list(sublists[len(shapes):])
    args_theirs = [x for pair in zip(theirs, sublists) for x in pair] + list(sublists[len(shapes):])
    np.testing.assert_allclose(scriptc.einsum(*args_ours).numpy(), torch.einsum(*args_theirs).numpy(), rtol=1e-12)


def test_sublist_form_keeps_gradients():
    (a, b), (ta, tb) = _both((2, 3), (3, 4))
    for t in (a, b, ta, tb):
        t.requires_grad_(True)
    scriptc.einsum(a, [0, 1], b, [1, 2], [0, 2]).sum().backward()
    torch.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("code", [
    "T.einsum(T.ones(2, 3), [0, 60], T.ones(3, 4), [60, 2])",
    "T.einsum(T.ones(2, 3))",
    "T.einsum(T.ones(2, 3), [0, 1, 2])",
])
def test_sublist_errors_match_torch(code):
    with pytest.raises(Exception) as theirs:
        eval(code, {"T": torch})
    with pytest.raises(type(theirs.value)) as ours:
        eval(code, {"T": scriptc})
    assert str(ours.value) == str(theirs.value)
