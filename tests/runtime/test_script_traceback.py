"""Errors raised while scripted code runs name the scripted calls and lines they came from, as torch's do."""

from __future__ import annotations

from typing import List

import pytest

import scriptc
from scriptc.runtime.script_traceback import HEADER

torch = pytest.importorskip("torch")


def inner(values: List[int], i: int) -> int:
    for j in range(3):
        if j == 2:
            return values[i]
    return 0


def outer(values: List[int]) -> int:
    total = 0
    for i in range(4):
        total += inner(values, i)
    return total


def unsqueezed(x, dim):
    return x.unsqueeze(dim)


def raising(n: int) -> int:
    if n > 2:
        raise ValueError("too big")
    return n


class Raising(torch.nn.Module):
    def forward(self, n: int) -> int:
        return raising(n) + 1


class OurRaising(scriptc.nn.Module):
    def forward(self, n: int) -> int:
        return raising(n) + 1


def _failure(compiled, *args) -> str:
    with pytest.raises(RuntimeError) as raised:
        compiled(*args)
    return str(raised.value)


def _agrees_with_torch(ours: str, theirs: str) -> None:
    assert ours.startswith(HEADER) and theirs.startswith(HEADER)
    assert ours.strip().splitlines()[-1] == theirs.strip().splitlines()[-1]


def test_a_failing_operation_names_its_function_and_line():
    ours = _failure(scriptc.jit.script(unsqueezed), scriptc.tensor([2]), scriptc.tensor([2, 2]))
    theirs = _failure(torch.jit.script(unsqueezed), torch.tensor([2]), torch.tensor([2, 2]))
    _agrees_with_torch(ours, theirs)
    assert 'test_script_traceback.py", line 30, in unsqueezed' in ours
    assert "    return x.unsqueeze(dim)\n" in ours
    assert ours.strip().endswith("RuntimeError: Cannot input a tensor of dimension other than 0 as a scalar argument")


def test_each_scripted_call_on_the_way_out_names_its_line_once_outermost_first():
    ours = _failure(scriptc.jit.script(outer), [1, 2])
    theirs = _failure(torch.jit.script(outer), [1, 2])
    _agrees_with_torch(ours, theirs)
    frames = [line for line in ours.splitlines() if line.startswith("  File ")]
    assert [frame.rsplit(" in ", 1)[1] for frame in frames] == ["outer", "inner"]
    assert "total += inner(values, i)" in ours and "return values[i]" in ours


def test_a_raise_in_script_keeps_torchs_jit_error_and_its_message_last():
    messages = []
    for engine, module in ((torch, Raising()), (scriptc, OurRaising())):
        with pytest.raises(engine.jit.Error) as raised:
            engine.jit.script(module)(3)
        messages.append(str(raised.value))
    theirs, ours = messages
    _agrees_with_torch(ours, theirs)
    assert ours.strip().splitlines()[-1] == "builtins.ValueError: too big"
    assert "line 46, in forward" in ours and "line 35, in raising" in ours


def test_a_failure_keeps_its_exception_class_and_an_error_outside_script_is_untouched():
    with pytest.raises(RuntimeError, match="list index out of range"):
        scriptc.jit.script(outer)([1])
    with pytest.raises(IndexError) as raised:
        outer([1])
    assert str(raised.value) == "list index out of range"


def test_scriptcs_own_error_classes_are_named_by_the_builtin_class_torch_names():
    def add(x, y):
        return x + y

    ours = _failure(scriptc.jit.script(add), scriptc.ones(2), scriptc.ones(3))
    theirs = _failure(torch.jit.script(add), torch.ones(2), torch.ones(3))
    assert ours.strip().splitlines()[-1].startswith("RuntimeError: ")
    assert "must match the size of tensor b (3)" in ours and "must match the size of tensor b (3)" in theirs


def row_ten(x):
    return x[10]


def column_five(x):
    return x[:, 5]


def store_row_ten(x):
    x[10] = 1.0
    return x


def gathered_rows_nine(x):
    return x[(x.sum(1) + 9).long()]


def _frozen(engine, fn):
    class Calling(engine.nn.Module):
        def forward(self, x):
            return fn(x)

    return engine.jit.optimize_for_inference(engine.jit.freeze(engine.jit.script(Calling()).eval()))


@pytest.mark.parametrize("fn", [row_ten, column_five, store_row_ten, gathered_rows_nine])
def test_a_tensor_index_out_of_range_is_indexerror_in_eager_and_runtimeerror_scripted_and_compiled(fn):
    for engine in (torch, scriptc):
        for compiled in (engine.jit.script(fn), _frozen(engine, fn)):
            with pytest.raises(RuntimeError, match="out of") as raised:
                compiled(engine.zeros(3, 4))
            assert not isinstance(raised.value, IndexError)
        with pytest.raises(IndexError, match="out of"):
            fn(engine.zeros(3, 4))
