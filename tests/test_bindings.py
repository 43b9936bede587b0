"""The generated torch functions (scriptc/bindings.py): an overloaded name picks the overload its
arguments fit, a Python complex number fitting a Scalar as in torch, against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("call", [
    "T.where(T.ones(2, dtype=T.bool), T.ones(2), 1 + 2j)",
    "T.where(T.ones(2, dtype=T.bool), 2j, T.ones(2, dtype=T.float64))",
    "T.where(T.ones(2, dtype=T.bool), T.arange(2, dtype=T.int32), 1j)",
    "T.where(T.ones(2, dtype=T.bool), T.ones(2), 3)",
])
def test_overload_taking_a_python_number_matches_torch(call):
    ours, theirs = eval(call, {"T": scriptc}), eval(call, {"T": torch})
    assert str(ours.dtype) == str(theirs.dtype) and ours.tolist() == theirs.tolist()
