"""Running an op's kernel: operands that are all Python scalars take torch's promoted dtype (the
default float for floats), not numpy's float64; the Python-value ops' errors are RuntimeErrors, as
TorchScript raises them."""

from __future__ import annotations

from typing import Dict, List

import pytest

import scriptc as torch


def _choices(x):
    return (torch.where(x > 0.5, 1.0, 0.0), torch.where(x > 0.5, 1, 0), torch.where(x > 0.5, True, False),
            torch.where(x > 0.5, x, 0.0), torch.where(x > 0.5, 2, x.double()))


@pytest.mark.parametrize("run, bools", [(_choices, torch.bool), (torch.jit.script(_choices), torch.int64)],
                         ids=["eager", "scripted"])
def test_where_between_python_scalars_gives_the_promoted_dtype(run, bools):
    # (real torch.jit.script passes True and False to where's Scalars as the ints 1 and 0)
    x = torch.tensor([0.2, 0.7])
    dtypes = [t.dtype for t in run(x)]
    assert dtypes == [torch.float32, torch.int64, bools, torch.float32, torch.float64]
    assert run(x)[0].tolist() == [0.0, 1.0]


def test_where_between_python_floats_follows_the_default_dtype():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.where(torch.tensor([True]), 1.0, 0.0).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


def _list_item(x: List[int]) -> int:
    return x[3]


def _dict_item(d: Dict[str, int]) -> int:
    return d["z"]


def _popped(x: List[int]) -> int:
    return x.pop(5)


@pytest.mark.parametrize("fn, argument, message", [
    (_list_item, [1], "list index out of range"), (_dict_item, {"a": 1}, "KeyError: z"),
    (_popped, [1], "list index out of range"),
])
def test_a_missing_list_item_or_dict_key_in_scripted_code_is_a_runtime_error(fn, argument, message):
    # real torch.jit.script raises these as RuntimeErrors (an `except IndexError` would not see them)
    with pytest.raises(RuntimeError, match=message) as raised:
        torch.jit.script(fn)(argument)
    assert not isinstance(raised.value, LookupError)
