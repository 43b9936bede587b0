"""Module interfaces against torch 2.13: a submodule annotated with one is reached only through the
interface's methods, and an interface class derives directly from nn.Module or object."""

import pytest

import scriptc as torch
from scriptc import nn

pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind


class _OneTwo(nn.Module):
    def one(self, a, b):
        # type: (Tensor, Tensor) -> Tensor
        return a + b + 1

    def two(self, a):
        # type: (Tensor) -> Tensor
        return a + 2

    def forward(self, a):
        # type: (Tensor) -> Tensor
        return a + self.one(a, a) + 1


@torch.jit.interface
class _OnlyOne(nn.Module):
    def one(self, a, b):
        # type: (Tensor, Tensor) -> Tensor
        pass


class _CallsOne(nn.Module):
    proxy: _OnlyOne

    def __init__(self):
        super().__init__()
        self.proxy = _OneTwo()

    def forward(self, a):
        # type: (Tensor) -> Tensor
        return self.proxy.one(a, a)


class _CallsTwo(_CallsOne):
    def forward(self, a):
        # type: (Tensor) -> Tensor
        return self.proxy.two(a)


def test_a_method_of_the_interface_is_called():
    x = torch.randn(3)
    assert torch.allclose(torch.jit.script(_CallsOne())(x), 2 * x + 1)


def test_a_method_the_interface_lacks_is_refused():
    with pytest.raises(RuntimeError, match="'__torch__._OnlyOne' object has no attribute or method 'two'"):
        torch.jit.script(_CallsTwo())


def test_an_interface_that_inherits_is_refused():
    with pytest.raises(RuntimeError, match="does not support inheritance yet. Please directly inherit"):
        @torch.jit.interface
        class FromReLU(nn.ReLU):
            def three(self, a):
                # type: (Tensor) -> Tensor
                return 3 * a


@torch.jit.interface
class _Forward(nn.Module):
    def forward(self, a):
        # type: (Tensor) -> Tensor
        pass


@torch.jit.script
class _NotAModule:
    def forward(self, a):
        # type: (Tensor) -> Tensor
        return a


def _passes_through(m):
    # type: (_Forward) -> _Forward
    return m


@pytest.mark.parametrize("value, found", [(_NotAModule(), "_NotAModule"), (3, "int")])
def test_a_module_interface_argument_must_be_a_module(value, found):
    scripted = torch.jit.script(_passes_through)
    with pytest.raises(RuntimeError, match=f"Expected a value of type '__torch__._Forward' for argument 'm' but instead found "
                                           f"type '{found}'"):
        scripted(value)


class _IteratesModules(_CallsOne):
    @torch.jit.export
    def method(self, a):
        for module in self.modules():
            a = module(a)
        return a


class _CallsTheProxy(_CallsOne):
    def forward(self, a):
        # type: (Tensor) -> Tensor
        return self.proxy(a)


def test_iterating_modules_over_an_interface_attribute_is_refused():
    with pytest.raises(RuntimeError, match=r"Could not compile modules\(\) because module is an interface type"):
        torch.jit.script(_IteratesModules())


def test_calling_a_submodule_whose_interface_has_no_forward_is_refused():
    with pytest.raises(RuntimeError, match="'__torch__._OnlyOne' object has no attribute or method 'forward'"):
        torch.jit.script(_CallsTheProxy())
