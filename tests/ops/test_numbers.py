"""Python numbers in scripted code follow TorchScript: min/max of an int and a float is a float."""

from __future__ import annotations

import pytest

import scriptc as torch


@pytest.mark.parametrize(("call", "expected"), [
    ("min(2, 3.5)", 2.0), ("max(7, 3.14)", 7.0), ("max(2.0, 2)", 2.0), ("min(-3, -0.5)", -3.0),
    ("min(2, 3)", 2), ("max(torch.tensor(7).item(), 0.125)", 7.0), ("max(torch.tensor(7).item(), 1)", 7),
])
def test_min_and_max_of_mixed_numbers_are_floats(call, expected):
    unit = torch.jit.CompilationUnit(f"def fn():\n    return {call}\n")
    got = unit.fn()
    assert type(got) is type(expected) and got == expected
