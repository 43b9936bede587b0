"""Pointwise ops (scriptc/ops/pointwise.py) against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")

# each written once and run with `T` bound to torch and to scriptc
SUBTRACTIONS = [
    "T.tensor([True, False]) - 1", "T.tensor([True, False]) - False", "T.tensor([True]) - T.tensor([True])",
    "1 - T.tensor([True, False])", "T.tensor([True]).sub(1.5)", "T.tensor([1, 2]) - True",
    "T.tensor([1, 2]) - T.tensor([True, False])", "T.tensor([True]).clone().sub_(1)",
    "T.tensor([1, 2]).sub_(T.tensor([True, False]))", "T.sub(3, T.tensor([1, 2]))",
    "T.sub(T.tensor([1, 2]), T.tensor([3, 1]), alpha=2)", "T.tensor([1.5]) - 2",
]


@pytest.mark.parametrize("call", SUBTRACTIONS)
def test_subtraction_refuses_bool_operands_as_torch(call):
    # torch checks the operands' own dtypes, before promotion; a Python bool counts as a bool tensor
    def outcome(T):
        try:
            return eval(call, {"T": T}).tolist()
        except Exception as exc:  # noqa: BLE001 - the error is the result compared
            return type(exc).__name__, str(exc)

    assert outcome(scriptc) == outcome(torch)
