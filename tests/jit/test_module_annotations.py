"""nn.Module and ScriptModule name no TorchScript type: annotating a scripted value with them is refused
as torch 2.13 refuses it (a ValueError inside a Dict, elsewhere 'Unknown type name')."""

from typing import Dict, List

import pytest

import scriptc as torch
from scriptc import nn

pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind


class _Inner(nn.Module):
    def forward(self, x):
        return x + 1


class _DictOfScriptModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"a": _Inner()})

    def forward(self, x):
        named: Dict[str, torch.jit.ScriptModule] = {"a": self.blocks["a"]}  # noqa: F841
        return x


class _DictOfModules(nn.Module):
    def forward(self, x):
        named: Dict[str, List[nn.Module]] = {}  # noqa: F841
        return x


class _ListOfModules(nn.Module):
    def forward(self, x):
        items: List[nn.Module] = []  # noqa: F841
        return x


def _takes_a_module(m: nn.Module) -> int:
    return 1


@pytest.mark.parametrize("module", [_DictOfScriptModules, _DictOfModules])
def test_a_dict_of_modules_is_a_value_error(module):
    with pytest.raises(ValueError, match="Unknown type annotation: '"):
        torch.jit.script(module())


def test_elsewhere_the_name_is_unknown():
    with pytest.raises(RuntimeError, match="Unknown type name 'nn.Module'") as caught:
        torch.jit.script(_ListOfModules())
    assert not isinstance(caught.value, ValueError)
    with pytest.raises(RuntimeError, match="Unknown type name 'nn.Module'"):
        torch.jit.script(_takes_a_module)


def test_a_module_subclass_attribute_still_types_its_submodule():
    class Outer(nn.Module):
        inner: _Inner

        def __init__(self):
            super().__init__()
            self.inner = _Inner()

        def forward(self, x):
            return self.inner(x)

    assert float(torch.jit.script(Outer())(torch.zeros(1))[0]) == 1.0
