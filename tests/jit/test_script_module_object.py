"""The ScriptModule object as Python code sees it: its print, original_name, dir(), and a module without
a forward of its own, as torch's RecursiveScriptModule behaves."""
import pytest

import scriptc as torch
from scriptc import nn


class _Leaf(nn.Module):
    def forward(self, x):
        return x


class _Branch(nn.Module):
    def __init__(self):
        super().__init__()
        self.leaf = _Leaf()

    def forward(self, x):
        return self.leaf(x)


class _Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.branch = _Branch()

    def forward(self, x):
        return self.branch(self.lin(x))


def test_print_lists_submodules_by_their_original_names():
    scripted = torch.jit.script(_Tree())
    assert scripted.original_name == "_Tree"
    assert repr(scripted) == (
        "RecursiveScriptModule(\n"
        "  original_name=_Tree\n"
        "  (lin): RecursiveScriptModule(original_name=Linear)\n"
        "  (branch): RecursiveScriptModule(\n"
        "    original_name=_Branch\n"
        "    (leaf): RecursiveScriptModule(original_name=_Leaf)\n"
        "  )\n"
        ")")
    assert repr(torch.jit.script(_Leaf())) == "RecursiveScriptModule(original_name=_Leaf)"
    assert repr(torch.jit.trace(_Tree(), torch.ones(1, 3))) == (
        "_Tree(\n"
        "  original_name=_Tree\n"
        "  (lin): Linear(original_name=Linear)\n"
        "  (branch): _Branch(\n"
        "    original_name=_Branch\n"
        "    (leaf): _Leaf(original_name=_Leaf)\n"
        "  )\n"
        ")")


def test_dir_shows_the_modules_attributes():
    model = _Tree()
    listed = set(dir(torch.jit.script(model)))
    assert set(dir(model)) <= listed and "forward" in listed


def test_a_module_without_forward_scripts_and_refuses_calls():
    holder = nn.Module()
    holder.lin = nn.Linear(2, 2)
    scripted = torch.jit.script(holder)
    assert scripted.lin.weight is holder.lin.weight
    with pytest.raises(AttributeError, match="forward"):
        scripted(torch.ones(2))


class _Named(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def forward(self):
        return 0


class _Slices(nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = nn.ModuleList([_Named(n) for n in "ABCDE"])

    def forward(self):
        return self.parts[::-2], self.parts[1:4]


def test_submodules_scripted_code_returns_are_the_modules():
    backwards, middle = torch.jit.script(_Slices())()
    assert [m.name for m in backwards] == ["E", "C", "A"] and [m.name for m in middle] == ["B", "C", "D"]


def _scaled(engine):
    class Scaled(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2
            self.names = ["a"]

        def forward(self, x):
            return x * self.scale, len(self.names)

    return Scaled()


def test_assigning_a_plain_attribute_of_a_scripted_module_changes_what_its_methods_read():
    """scripted.scale = 3 is seen by the next call, as torch's scripted module sees it (the number was
    compiled in as a constant and the assignment only set a Python attribute of the wrapper)."""
    real_torch = pytest.importorskip("torch")

    def run(engine):
        scripted = engine.jit.script(_scaled(engine))
        before = scripted(engine.ones(1))
        scripted.scale = 3
        scripted.names = ["a", "b", "c"]
        after = scripted(engine.ones(1))
        return before[0].tolist(), before[1], after[0].tolist(), after[1], scripted.scale

    assert run(torch) == run(real_torch) == ([2.0], 1, [3.0], 3, 3)


class _Offset(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.value = 1
        self.weight = torch.nn.Parameter(torch.ones(2))

    def shifted(self):
        return torch.ones(2) + self.value

    def forward(self, x):
        return x + self.shifted() + self.weight


def test_assigning_a_scripted_modules_attribute_or_parameter_changes_what_it_computes():
    """As on torch's scripted module: `scripted.value = 2` and `scripted.weight = Parameter(...)` set
    the module's own attribute and parameter, which the next call reads."""
    scripted = torch.jit.script(_Offset())
    x = torch.zeros(2)
    assert scripted(x).tolist() == [3.0, 3.0]
    scripted.value = 2
    assert scripted(x).tolist() == [4.0, 4.0]
    scripted.weight = torch.nn.Parameter(torch.zeros(2))
    assert scripted(x).tolist() == [3.0, 3.0]
    assert scripted.value == 2 and dict(scripted.named_parameters())["weight"].tolist() == [0.0, 0.0]


class _BadConstant(torch.nn.Module):
    __constants__ = ["layers", "sizes"]

    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        self.sizes = [3, (3, 4), 5]

    def forward(self, x):
        return x


def test_a_constant_of_no_torchscript_type_is_torchs_type_error():
    assert torch.jit.script(_BadConstant(3))(torch.ones(1)).tolist() == [1.0]
    with pytest.raises(TypeError, match="'torch.nn.modules.linear.Linear' object in attribute '_BadConstant.layers' "
                                        "is not a valid constant"):
        torch.jit.script(_BadConstant([torch.nn.Linear(3, 4)]))
