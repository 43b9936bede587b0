"""Module attributes in scripted code: __jit_ignored_attributes__ as torch treats them."""
import pytest

import scriptc as torch


class _Sub(torch.nn.Module):
    def forward(self, a: int) -> int:
        return a + 1


class _IgnoresSome(torch.nn.Module):
    __jit_ignored_attributes__ = ["a", "sub"]

    def __init__(self):
        super().__init__()
        self.a = 1
        self.b = 4
        self.sub = _Sub()

    def forward(self) -> int:
        return self.b

    @torch.jit.ignore
    def in_python(self) -> int:
        return self.sub(self.a)


class _ReadsIgnored(_IgnoresSome):
    def forward(self) -> int:
        return self.sub(self.b)


def test_ignored_attributes_stay_python_only():
    scripted = torch.jit.script(_IgnoresSome())
    assert scripted() == 4
    assert scripted.in_python() == 2


def test_reading_an_ignored_attribute_is_refused():
    with pytest.raises(RuntimeError, match="Module '_ReadsIgnored' has no attribute 'sub' attribute was ignored "
                                           "during compilation"):
        torch.jit.script(_ReadsIgnored())
