"""@torch.jit.script classes defined inside functions: the names their methods see, against torch 2.13."""

from __future__ import annotations

from typing import Optional

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _tree_depth(engine):
    @engine.jit.script
    class Leaf:
        def __init__(self, value: int):
            self.value = value

    @engine.jit.script
    class Holder:
        def __init__(self):
            self.child = engine.jit.annotate(Optional[Leaf], None)

        def add_child(self, child):
            # type: (Leaf) -> None
            self.child = child  # Leaf is a local of the defining function, named only in a type comment

        def total(self) -> int:
            child = self.child
            return 0 if child is None else child.value

    @engine.jit.script
    def use(v: int) -> int:
        h = Holder()
        before = h.total()
        h.add_child(Leaf(v))
        return before + h.total()

    return use


def test_a_script_class_sees_the_locals_of_the_function_that_scripted_it():
    assert _tree_depth(scriptc)(7) == _tree_depth(torch)(7) == 7
