"""Scripted modules' types (`_c._type()`) and torch's type sharing between them."""

import pytest

import scriptc as torch
from scriptc.errors import ScriptError


def type_of(module):
    scripted = module if isinstance(module, torch.jit.ScriptModule) else torch.jit.script(module)
    return scripted._c._type()


class Holder(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return x


class WithConstant(torch.nn.Module):
    __constants__ = ["const"]

    def __init__(self, const):
        super().__init__()
        self.const = const
        self.weight = torch.rand(2)

    def forward(self):
        return self.const


class Caller(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x, x)


def test_attribute_values_do_not_matter_but_their_types_do():
    assert type_of(Holder(torch.rand(2, 3))) == type_of(Holder(torch.zeros(5)))
    assert type_of(Holder(1)) == type_of(Holder(7))
    assert type_of(Holder(1)) != type_of(Holder("one"))
    assert type_of(Holder([1, 2])) != type_of(Holder([1.0]))


def test_constants_are_part_of_the_type():
    assert type_of(WithConstant(1)) == type_of(WithConstant(1))
    assert type_of(WithConstant(1)) != type_of(WithConstant(2))
    # nn layers declare torch's __constants__: their sizes tell their types apart
    assert type_of(torch.nn.Linear(5, 5)) == type_of(torch.nn.Linear(5, 5))
    assert type_of(torch.nn.Linear(5, 5)) != type_of(torch.nn.Linear(10, 10))


def test_parameters_attributes_and_classes():
    assert type_of(Holder(torch.nn.Parameter(torch.ones(2)))) != type_of(Holder(torch.ones(2)))

    class Other(Holder):
        pass

    assert type_of(Holder(1)) != type_of(Other(1))


def test_submodules_share_by_their_own_types():
    assert type_of(Holder(torch.nn.Linear(2, 2))) == type_of(Holder(torch.nn.Linear(2, 2)))
    assert type_of(Holder(torch.nn.Linear(2, 2))) != type_of(Holder(torch.nn.Linear(3, 2)))
    first = torch.nn.ModuleDict({"a": torch.nn.ReLU()})
    assert type_of(Holder(first)) != type_of(Holder(torch.nn.ModuleDict({"b": torch.nn.ReLU()})))


def test_function_attributes_share_by_identity():
    def double(x, y):
        return x + y

    def difference(x, y):
        return x - y

    assert type_of(Caller(double)) == type_of(Caller(double))
    assert type_of(Caller(double)) != type_of(Caller(difference))
    assert type_of(Caller(torch.add)) == type_of(Caller(torch.add))
    assert type_of(Caller(torch.add)) != type_of(Caller(torch.sub))


def test_attributes_set_after_scripting_do_not_change_the_type():
    scripted = torch.jit.script(Holder(1))
    scripted.extra = "later"
    assert scripted._c._type() == type_of(Holder(2))
    before = Holder(1)
    before.extra = "before"
    assert type_of(before) != type_of(Holder(2))


def test_ignored_attributes_are_left_out():
    class Partly(torch.nn.Module):
        __jit_ignored_attributes__ = ["skipped"]

        def __init__(self, skipped, kept):
            super().__init__()
            self.skipped = skipped
            self.kept = kept

        def forward(self, x):
            return x

    assert type_of(Partly(torch.nn.Linear(2, 2), 1)) == type_of(Partly("text", 2))
    assert type_of(Partly("text", 1)) != type_of(Partly("text", "one"))


def test_traced_modules_and_unshared_types_are_their_own():
    example = (torch.ones(2),)
    assert type_of(torch.jit.trace(Holder(1), example)) != type_of(torch.jit.trace(Holder(1), example))
    recursive = torch.jit._recursive
    first = recursive.create_script_module(Holder(Holder(1)), recursive.infer_methods_to_compile, share_types=False)
    second = recursive.create_script_module(Holder(Holder(1)), recursive.infer_methods_to_compile, share_types=False)
    assert first._c._type() != second._c._type()
    assert first(torch.ones(2)).tolist() == [1.0, 1.0]


def test_type_names_and_methods():
    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    assert scripted._c._type().name() == "Linear"
    assert scripted._c._type().qualified_name().startswith("__torch__.")
    assert scripted._c._has_method("forward") and not scripted._c._has_method("backward")
    assert scripted._c._method_names() == ["forward"]


def test_an_attribute_without_a_torchscript_type_is_refused_in_torchs_words():
    class UsesClass(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.kind = object

        def forward(self):
            return self.kind

    with pytest.raises(ScriptError, match="failed to convert Python type: 'type' to a TorchScript type"):
        torch.jit.script(UsesClass())


@torch.jit.interface
class _Combine(torch.nn.Module):
    def one(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        pass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class _Sum(torch.nn.Module):
    def one(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.one(x, x)


class _Product(torch.nn.Module):
    def one(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.one(x, x + 1)


class _Uncalled(torch.nn.Module):
    def one(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a - b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class _IntForward(torch.nn.Module):
    def one(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a

    def forward(self, x: int) -> int:
        return x + self.one(torch.ones(1), torch.ones(1)).numel()


class _Proxy(torch.nn.Module):
    inner: _Combine

    def __init__(self):
        super().__init__()
        self.inner = _Sum()
        self.plain = _Sum()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) + self.plain(x)


def test_a_submodule_swapped_through_its_interface_runs_in_later_calls():
    scripted = torch.jit.script(_Proxy())
    x = torch.tensor([1.0, 2.0])
    assert scripted(x).tolist() == [4.0, 8.0]
    assert scripted._c._has_method("forward")
    scripted.inner = torch.jit.script(_Product())
    assert scripted(x).tolist() == [4.0, 10.0]


@pytest.mark.parametrize("replacement, message", [
    (_Product(), "Cannot re-assign modules in a ScriptModule with non-scripted module, tried to replace existing "
                 "module 'inner'"),
    (torch.jit.script(_Uncalled()), "not compatible with interface .*_Combine: it has no compiled method 'one'"),
    (torch.jit.script(_IntForward()), "not compatible with interface .*its method 'forward' takes \\(int\\)"),
])
def test_a_swap_the_interface_does_not_allow_is_refused_in_torchs_words(replacement, message):
    scripted = torch.jit.script(_Proxy())
    with pytest.raises(RuntimeError, match=message):
        scripted.inner = replacement


def test_a_submodule_without_an_interface_swaps_only_for_its_own_type():
    scripted = torch.jit.script(_Proxy())
    scripted.plain = torch.jit.script(_Sum())
    with pytest.raises(RuntimeError, match="Expected a value of type '__torch__.*_Sum \\(.*\\)' for field 'plain', but "
                                           "found '__torch__.*_Product \\(.*\\)'"):
        scripted.plain = torch.jit.script(_Product())


class _EmptySlot(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_module("slot", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_a_module_swapped_into_a_none_submodule_slot_is_refused_in_torchs_words():
    scripted = torch.jit.script(_EmptySlot())
    with pytest.raises(RuntimeError, match="Could not cast attribute 'slot' to type NoneType: Cannot cast "
                                           "RecursiveScriptModule\\(original_name=_Sum\\) to None"):
        scripted.slot = torch.jit.script(_Sum())


@pytest.mark.parametrize("module, name", [
    (lambda: torch.nn.ReLU(), "__torch__.torch.nn.modules.activation.ReLU"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(2, 2)), "__torch__.torch.nn.modules.container.Sequential"),
    (lambda: torch.nn.MultiheadAttention(4, 2), "__torch__.torch.nn.modules.activation.MultiheadAttention"),
])
def test_nn_module_types_are_named_as_torchs(module, name):
    scripted_type = torch.jit.script(module())._c._type()
    assert scripted_type.qualified_name() == name and scripted_type.name() == name.rsplit(".", 1)[1]
