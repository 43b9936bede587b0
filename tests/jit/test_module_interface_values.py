"""Module interfaces as values, against torch 2.13: a scripted function's parameter or list element
typed with one holds a module whose interface methods the function calls; a module lacking one is
refused where torch refuses it (the call from Python, or jit.script of the owner)."""

from typing import List

import pytest

import scriptc as torch
from scriptc import Tensor, nn

pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind


@torch.jit.interface
class _OneTwo(nn.Module):
    def one(self, x: Tensor, y: Tensor) -> Tensor:
        pass

    def forward(self, x: Tensor) -> Tensor:
        pass


class _Adds(nn.Module):
    def one(self, x: Tensor, y: Tensor) -> Tensor:
        return x + y

    def forward(self, x: Tensor) -> Tensor:
        return self.one(2 * x, x)


class _Multiplies(nn.Module):
    def one(self, x: Tensor, y: Tensor) -> Tensor:
        return x * y

    def forward(self, x: Tensor) -> Tensor:
        return 2 / self.one(x, x)


class _LacksOne(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + 1


def _through_list(mods: List[_OneTwo], x: Tensor) -> Tensor:
    return mods[0].forward(x) + mods[1].one(x, x)


def _chained(mods: List[_OneTwo], x: Tensor) -> Tensor:
    for m in mods:
        x = m.forward(x)
    return x


def _one(m: _OneTwo, x: Tensor) -> Tensor:
    return m.one(x, 3 * x)


def _called(m: _OneTwo, x: Tensor) -> Tensor:
    return m(x)


class _Owner(nn.Module):
    def __init__(self):
        super().__init__()
        self.adds = _Adds()

    def forward(self, x: Tensor) -> Tensor:
        return _one(self.adds, x)


class _Holder(nn.Module):
    proj: _OneTwo

    def __init__(self, proj):
        super().__init__()
        self.proj = proj

    def forward(self, x: Tensor) -> Tensor:
        return self.proj.forward(x)


@pytest.mark.parametrize("fn", [_through_list, _chained])
def test_a_list_of_module_interface_values_calls_each_modules_methods(fn):
    x = torch.rand(3, 4) + 0.5
    mods = [torch.jit.script(_Adds()), torch.jit.script(_Multiplies())]
    torch.testing.assert_close(torch.jit.script(fn)(mods, x), fn(mods, x))


def test_a_module_interface_parameter_calls_the_modules_method():
    x = torch.rand(5)
    torch.testing.assert_close(torch.jit.script(_one)(torch.jit.script(_Multiplies()), x), x * (3 * x))


def test_a_submodule_passed_for_a_module_interface_parameter():
    x = torch.rand(2, 3)
    torch.testing.assert_close(torch.jit.script(_Owner())(x), x + 3 * x)


def test_a_module_lacking_an_interface_method_is_refused_at_the_call():
    scripted = torch.jit.script(_one)
    with pytest.raises(RuntimeError, match="Expected a value of type '__torch__._OneTwo' for argument 'm' but "
                                           "instead found type 'RecursiveScriptModule'.(.|\n)*Class "
                                           "'__torch__._LacksOne' does not have method 'one'"):
        scripted(torch.jit.script(_LacksOne()), torch.ones(2))


def test_a_module_interface_value_is_not_callable():
    with pytest.raises(RuntimeError, match=r"cannot call a value of type '__torch__._OneTwo'"):
        torch.jit.script(_called)


def test_a_submodule_lacking_a_method_of_its_annotated_interface_is_refused():
    assert torch.jit.script(_Holder(_Adds()))(torch.ones(2)).tolist() == [3.0, 3.0]
    with pytest.raises(AttributeError, match="'_LacksOne' object has no attribute 'one'"):
        torch.jit.script(_Holder(_LacksOne()))
