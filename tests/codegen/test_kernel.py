"""Fused kernels keep the checks eager runs (scriptc/codegen/kernel.py): a group whose typed
arguments an op refuses - a bool tensor subtracted or negated, an integer tensor to a negative
power - is left to its reference, which raises torch's error instead of computing a result."""

import pytest

import scriptc as torch
from scriptc import nn


class _BoolSubtraction(nn.Module):
    def forward(self, x, y):
        return ((x > 0) - (y > 0)).float() * 2 + x


class _BoolNegation(nn.Module):
    def forward(self, x):
        return (-(x > 0)).float() + x


class _Subtraction(nn.Module):
    def forward(self, x, y):
        return (x - y) * 2 + 1


class _Power(nn.Module):
    def forward(self, x, n: int):
        return (x * 2 + 1) ** n + 1


def _optimized(module):
    return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(module.eval())))


@pytest.mark.parametrize("module, args, message", [
    (_BoolSubtraction(), (torch.randn(4, 8), torch.randn(4, 8)), "with two bool tensors is not supported"),
    (_BoolNegation(), (torch.randn(4, 8),), "Negation, the `-` operator, on a bool tensor is not supported"),
])
def test_a_fused_group_raises_what_eager_raises(module, args, message):
    with pytest.raises(RuntimeError, match=message):
        module(*args)
    with pytest.raises(RuntimeError, match=message):
        _optimized(module)(*args)


def test_a_group_compiled_for_floats_refuses_bools_met_later():
    optimized = _optimized(_Subtraction())
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    torch.testing.assert_close(optimized(x, y), (x - y) * 2 + 1)
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        optimized(x > 0, y > 0)


def test_an_integer_power_with_a_scalar_exponent_refuses_a_negative_one():
    optimized = _optimized(_Power())
    x = torch.arange(8).view(2, 4)
    assert torch.equal(optimized(x, 2), (x * 2 + 1) ** 2 + 1)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        optimized(x, -2)
    torch.testing.assert_close(optimized(x.float(), -2), (x.float() * 2 + 1) ** -2 + 1)
