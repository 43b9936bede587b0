"""Pointwise ops (scriptc/ops/pointwise.py) against torch 2.13: sub of bools, integer powers."""

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


POWERS = [
    "2 ** T.tensor([-3, -1, 0, 2])", "(-2) ** T.tensor([-3, -1, 0, 2])", "(-1) ** T.tensor([-3, -2, 0, 1])",
    "0 ** T.tensor([-1, 0, 2])", "T.tensor([2, -1, 1, 3]) ** T.tensor([-1, -3, -2, -1])",
    "T.tensor([[1], [-1]]) ** T.tensor([-2, -1, 3])", "T.tensor([2, -1]) ** -1", "T.tensor([2, -1]) ** 3",
    "T.tensor([0, 2], dtype=T.int8) ** T.tensor([-1, -1], dtype=T.int8)", "T.tensor([0.0, 2.0]) ** -1",
]


@pytest.mark.parametrize("call", POWERS)
def test_integer_powers_with_negative_exponents_are_torchs(call):
    # numpy refuses integers to negative powers; torch refuses a negative Python exponent only
    def outcome(T):
        try:
            result = eval(call, {"T": T})
            return result.tolist(), str(result.dtype).split(".")[-1]
        except Exception as exc:  # noqa: BLE001 - the error is the result compared
            return type(exc).__name__, str(exc)

    assert outcome(scriptc) == outcome(torch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "int16", "float16"])
def test_masked_fill_refuses_a_non_boolean_mask_as_torch(dtype):
    messages = []
    for lib in (scriptc, torch):
        for call in (lambda x, m: x.masked_fill(m, 0.0), lambda x, m: x.masked_fill_(m, 0.0)):
            with pytest.raises(RuntimeError) as info:
                call(lib.ones(2), lib.ones(2, dtype=getattr(lib, dtype)))
            messages.append(str(info.value))
    assert messages[:2] == messages[2:]
    traced = scriptc.jit.trace(lambda x, m: x.masked_fill(m, 0.0), (scriptc.ones(2), scriptc.tensor([True, False])))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        traced(scriptc.ones(2), scriptc.ones(2, dtype=getattr(scriptc, dtype)))


@pytest.mark.parametrize("make", [
    lambda T, a, b, keep: T.where(keep, a, b),
    lambda T, a, b, keep: a.masked_fill(~keep, 0.0) + b.masked_fill(keep, 0.0),
])
def test_where_and_masked_fill_gradients_keep_non_finite_values_out_as_torch(make):
    """An element the op did not take gets gradient 0 even where the incoming gradient is inf or NaN."""
    grads = []
    for T in (scriptc, torch):
        a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
        keep = T.tensor([True, False, True])
        (make(T, a, b, keep) * T.tensor([float("inf"), float("nan"), 2.0])).sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert str(grads[0]) == str(grads[1])
