"""Indexing ModuleList/Sequential/ModuleDict in scripted code: literals only, with torch's errors."""
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
