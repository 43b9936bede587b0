"""Module attributes in scripted code: properties (getters and setters), __jit_ignored_attributes__ and
__jit_unused_properties__, as torch treats them."""
from typing import List

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


class _WithProperties(torch.nn.Module):
    __jit_unused_properties__ = ["python_only"]

    def __init__(self, a: int):
        super().__init__()
        self.a = a

    def forward(self, a: int, b: int):
        self.clamped = a + b
        return self.clamped

    @property
    def clamped(self):
        return self.a

    @clamped.setter
    def clamped(self, value: int):
        if value > 0:
            self.a = value
        else:
            self.a = 0

    @property
    def python_only(self):
        return sum([self.a])


@pytest.mark.parametrize("args", [(5, 6), (-5, -6)])
def test_a_property_setter_runs_when_scripted_code_assigns_it(args):
    eager, scripted_from = _WithProperties(3), _WithProperties(3)
    scripted = torch.jit.script(scripted_from)
    assert scripted(*args) == eager(*args)
    assert scripted_from.a == eager.a


def test_unused_properties_are_left_off_the_scripted_module():
    scripted = torch.jit.script(_WithProperties(3))
    assert scripted.clamped == 3
    with pytest.raises(AttributeError, match="has no attribute 'python_only'"):
        getattr(scripted, "python_only")  # noqa: B009


class _AssignsDeclaredList(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = torch.jit.Attribute([], List[int])

    def forward(self, values: List[int]) -> List[int]:
        self.seen = values  # written before any read: the declared type is the attribute's
        return self.seen


def test_an_attribute_declared_with_jit_attribute_takes_its_type_when_first_written():
    module = _AssignsDeclaredList()
    scripted = torch.jit.script(module)
    assert scripted([1, 2, 3]) == [1, 2, 3]
    assert module.seen == [1, 2, 3]



def test_a_jit_attribute_reads_as_its_value_on_the_scripted_module():
    # as torch's: eager, the attribute stays the Attribute declaration; scripted, it is the value,
    # whether or not a compiled method reads it
    class Named(torch.nn.Module):
        def __init__(self, read: bool):
            super().__init__()
            self.read = read
            self.names = torch.jit.Attribute(["a", "b"], List[str])

        def forward(self, x):
            if self.read:
                return x * len(self.names)
            return x * 2

    for read in (True, False):
        module = Named(read)
        assert isinstance(module.names, torch.jit.Attribute)
        scripted = torch.jit.script(module)
        assert scripted.names == ["a", "b"]
        assert scripted(torch.ones(2)).tolist() == [2.0, 2.0]
