"""Errors of list methods in scripted code are RuntimeErrors in TorchScript's (Python's) words."""

from __future__ import annotations

import pytest

import scriptc as torch


@pytest.mark.parametrize(("body", "message"), [
    ("a.index(5)", "'5' is not in list"),
    ("a.remove(5)", r"list.remove\(x\): x not in list"),
    ("max(torch.jit.annotate(List[int], []))", r"max\(\) arg is an empty sequence"),
    ("int('abc')", "invalid literal for int"),
])
def test_a_list_or_number_error_is_a_runtime_error_in_python_words(body, message):
    unit = torch.jit.CompilationUnit(f"def fn():\n    a = [4, 1, 3]\n    return {body}\n")
    with pytest.raises(RuntimeError, match=message) as caught:
        unit.fn()
    assert "input shapes" not in str(caught.value)


def test_remove_takes_out_the_first_equal_item():
    unit = torch.jit.CompilationUnit("def fn():\n    a = [1, 3, 2, 3]\n    a.remove(3)\n    return a\n")
    assert unit.fn() == [1, 2, 3]


def test_lists_of_tensors_compare_through_each_tensors_truth_value():
    unit = torch.jit.CompilationUnit(
        "def fn(x):\n    y = x * 1\n    return [x, y] == [y, x], [x] != [y]\n")
    assert unit.fn(torch.ones(1, 1)) == (True, False)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        unit.fn(torch.ones(2, 2))


@pytest.mark.parametrize("body", ["x.sort()", "x = sorted(x)", "x.sort(reverse=True)"])
def test_sorting_tensors_orders_one_element_tensors_and_refuses_larger_ones_in_torchs_words(body):
    unit = torch.jit.CompilationUnit(f"def fn(x: List[Tensor]):\n    {body}\n    return x\n")
    ordered = unit.fn([torch.tensor(2.0), torch.tensor(-1.0), torch.tensor(0.5)])
    expected = [2.0, 0.5, -1.0] if "reverse" in body else [-1.0, 0.5, 2.0]
    assert [t.item() for t in ordered] == expected
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        unit.fn([torch.zeros(2), torch.ones(2)])
