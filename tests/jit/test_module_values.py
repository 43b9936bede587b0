"""A scripted module's state is its own, as torch's: jit.script copies the module's attributes and
training flags, a submodule held twice once per owner (parameters and buffers shared); reading a
list or dict attribute gives a copy; a frozen module's attributes are its own slots holding the
scripted module's values."""

from __future__ import annotations

from typing import List

import pytest

import scriptc

torch = pytest.importorskip("torch")
ENGINES = pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])


def _aliased(engine):
    class Aliased(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = [1, 2, 3]
            self.b = self.a
            self.c = (self.a, 10)
            self.d = {"k": [4]}
            self.w = engine.nn.Parameter(engine.ones(2))

        def forward(self, x):
            self.b[1] += 10
            self.d["k"].append(5)
            return str(self.a) + str(self.b) + str(self.c) + str(self.d)

    return Aliased()


def _run_aliased(engine):
    module = _aliased(engine)
    scripted = engine.jit.script(module)
    x = engine.ones(1)
    first, second = scripted(x), scripted(x)
    return first, second, module.a, module.b, module.d, scripted.b, scripted.d, scripted.w is module.w


def test_each_attribute_is_copied_on_its_own_and_the_python_module_keeps_its_values():
    assert _run_aliased(scriptc) == _run_aliased(torch)


@ENGINES
def test_scripting_copies_the_training_flags(engine):
    class Mode(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = engine.nn.Dropout()

        def forward(self):
            return 2 if self.training and self.inner.training else 0

    module = Mode()
    while_training = engine.jit.script(module)
    module.eval()
    after_eval = engine.jit.script(module)
    assert not module.training and while_training.training and while_training() == 2
    assert not after_eval.training and after_eval() == 0


def _shared_submodule(engine):
    class Shared(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = engine.nn.Linear(2, 2)
            self.b = self.a
            self.sequence = engine.nn.Sequential(self.a)

        def forward(self, x):
            return self.sequence[0] is self.a, self.b is self.a, self.a is self.a

    scripted = engine.jit.script(Shared())
    scripted.a.eval()
    return (scripted(engine.ones(2)), scripted.a is scripted.b, scripted.a.weight is scripted.b.weight,
            scripted.b.training, [name for name, _ in scripted.named_modules()], len(list(scripted.parameters())))


def test_a_submodule_held_twice_is_copied_for_each_owner_its_parameters_shared():
    assert _shared_submodule(scriptc) == _shared_submodule(torch)


def _list_reads(engine):
    class Holder(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.values: List[int] = [1]

        def forward(self, x):
            return self.values

    scripted = engine.jit.script(Holder())
    read = scripted.values
    read.append(2)
    untouched = scripted(engine.ones(1))
    scripted.values = read
    return untouched, scripted(engine.ones(1)), scripted.values is scripted.values


def test_a_list_attribute_reads_as_a_copy_until_assigned_back():
    assert _list_reads(scriptc) == _list_reads(torch) == ([1], [1, 2], False)


def _frozen_slots(engine):
    class Appends(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = [11, 22]

        def forward(self, x):
            return self.a

        @engine.jit.export
        def grow(self, x):
            self.a.append(len(self.a))
            return self.a

    scripted = engine.jit.script(Appends()).eval()
    frozen = engine.jit.freeze(scripted, preserved_attrs=["grow"])
    x = engine.ones(1)
    scripted.grow(x)  # appends to the list both hold
    shared = frozen.forward(x)
    scripted.a = [0]  # a new list for the scripted module only
    return shared, frozen.forward(x), scripted.forward(x)


def test_a_frozen_module_shares_the_scripted_modules_lists_but_not_its_attribute_slots():
    assert _frozen_slots(scriptc) == _frozen_slots(torch)
