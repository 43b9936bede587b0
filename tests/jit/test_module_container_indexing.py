"""Indexing ModuleList/Sequential/ModuleDict in scripted code: literals, or a run-time index where an
annotation with a module interface takes the result; torch's errors otherwise."""
import io
from typing import Tuple

import pytest

import scriptc as torch
from scriptc import nn
from scriptc.errors import ScriptError


class _Shift(nn.Module):
    def __init__(self, amount: int):
        super().__init__()
        self.amount = amount

    def forward(self, x):
        return x + self.amount


class _Listed(nn.Module):
    def __init__(self):
        super().__init__()
        self.mods = nn.ModuleList([_Shift(i) for i in range(4)])
        self.named = nn.ModuleDict({"a": _Shift(10), "b": _Shift(20)})

    def forward(self, x):
        return self.mods[-1](self.mods[1](self.named["b"](x)))


class _OutOfRange(_Listed):
    def forward(self, x):
        return self.mods[-5](x)


class _VariableIndex(_Listed):
    def forward(self, x):
        i = 2
        return self.mods[i](x)


class _MissingKey(_Listed):
    def forward(self, x):
        return self.named["c"](x)


class _VariableKey(_Listed):
    def forward(self, x):
        key = "a"
        return self.named[key](x)


class _PlainListOfModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.ReLU(), nn.ReLU()]

    def forward(self):
        return len(self.layers)


def test_literal_indices_select_the_submodule():
    x = torch.zeros(2)
    assert torch.jit.script(_Listed())(x).tolist() == [24.0, 24.0]


@pytest.mark.parametrize("module, message", [
    (_OutOfRange, r"Index -5 out of range of length 4"),
    (_VariableIndex, r"Expected integer literal for index but got a variable or non-integer\. "
                     r"ModuleList/Sequential indexing is only supported with integer literals"),
    (_MissingKey, r"Key Error, c"),
    (_VariableKey, r"Unable to extract string literal index\. ModuleDict indexing is only supported with "
                   r"string literals"),
    (_PlainListOfModules, r"Module '_PlainListOfModules' has no attribute 'layers' \(This attribute exists on "
                          r"the Python module, but we failed to convert Python type: 'list' to a TorchScript "
                          r"type\. Could not infer type of list element: Cannot infer concrete type of "
                          r"torch\.nn\.Module\."),
])
def test_refused_indexing_is_a_runtime_error_in_torchs_words(module, message):
    with pytest.raises(ScriptError, match=message) as caught:
        torch.jit.script(module())
    assert isinstance(caught.value, RuntimeError)


@torch.jit.interface
class _ShiftInterface(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class _Picked(_Listed):
    def forward(self, x: torch.Tensor, position: int, name: str) -> torch.Tensor:
        by_position: _ShiftInterface = self.mods[position]
        by_name: _ShiftInterface = self.named[name]
        return by_name(by_position.forward(x))


def test_a_run_time_index_picks_the_module_where_an_interface_annotation_takes_it():
    module = _Picked()
    scripted = torch.jit.script(module)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    x = torch.zeros(2)
    for position in (0, 3, -1):
        for name in ("a", "b"):
            expected = module.named[name](module.mods[position](x)).tolist()
            assert scripted(x, position, name).tolist() == expected
            assert loaded(x, position, name).tolist() == expected
    with pytest.raises(torch.jit.Error, match="IndexError"):
        scripted(x, 4, "a")
    with pytest.raises(torch.jit.Error, match="KeyError"):
        loaded(x, 0, "c")


class _Pairs(nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x, x


class _WrongAnnotation(nn.Module):
    def __init__(self):
        super().__init__()
        self.mods = nn.ModuleList([_Shift(1), _Pairs()])

    def forward(self, x: torch.Tensor, position: int) -> torch.Tensor:
        picked: _ShiftInterface = self.mods[position]
        return picked(x)


def test_a_module_that_does_not_fit_the_interface_is_refused_in_torchs_words():
    with pytest.raises(ScriptError, match="Attribute 1 is not of annotated type _ShiftInterface"):
        torch.jit.script(_WrongAnnotation())


class _EmptyPicked(nn.Module):
    def __init__(self):
        super().__init__()
        self.mods = nn.ModuleList([])

    def forward(self, x: torch.Tensor, position: int) -> torch.Tensor:
        picked: _ShiftInterface = self.mods[position]
        return picked(x)


def test_a_run_time_index_into_an_empty_module_list_is_a_script_error():
    with pytest.raises(ScriptError, match="mods is an empty ModuleList: an index has no module to pick"):
        torch.jit.script(_EmptyPicked())
