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


@pytest.mark.parametrize(("types", "expression", "args"), [
    ("float, float", "a / b", (1.0, 0.0)), ("int, int", "a / b", (1, 0)), ("float, float", "-a / b", (1.0, 0.0)),
    ("float, float", "b / b", (1.0, 0.0)), ("float, float", "a // b", (1.0, 0.0)), ("float, int", "a // b", (1.0, 0)),
    ("float, float", "a % b", (1.0, 0.0)), ("complex, complex", "a / b", (1 + 1j, 0j)),
])
def test_a_float_by_zero_is_cs_inf_or_nan_as_in_torchscript(types, expression, args):
    real = pytest.importorskip("torch")
    first, second = types.split(", ")
    source = f"def fn(a: {first}, b: {second}):\n    return {expression}\n"
    expected, got = real.jit.CompilationUnit(source).fn(*args), torch.jit.CompilationUnit(source).fn(*args)
    assert type(got) is type(expected) and str(got) == str(expected)


@pytest.mark.parametrize(("types", "expression", "message"), [
    ("int, int", "a // b", "division by 0"),
    ("int, int", "divmod(a, b)", "ZeroDivisionError: integer division or modulo by zero"),
    ("float, float", "divmod(a, b)", r"ZeroDivisionError: float divmod\(\)"),
])
def test_an_int_division_by_zero_is_torchs_runtime_error(types, expression, message):
    real = pytest.importorskip("torch")
    first, second = types.split(", ")
    source = f"def fn(a: {first}, b: {second}):\n    return {expression}\n"
    for engine in (real, torch):
        with pytest.raises(RuntimeError, match=message):
            engine.jit.CompilationUnit(source).fn(1, 0)
    with pytest.raises(RuntimeError, match="integer division or modulo by zero"):  # (torch's crashes: SIGFPE)
        torch.jit.CompilationUnit("def fn(a: int, b: int):\n    return a % b\n").fn(1, 0)
