"""When torch compiles a script class used from scripted code (every method, at its first use) and
the class types it refuses (a class holding instances of itself), against torch 2.13."""

from __future__ import annotations

import re
from typing import Optional

import pytest

import scriptc

torch = pytest.importorskip("torch")


class _UnusedBadMethod:
    def __init__(self, value: int):
        self.value = value

    def never_called(self):
        import os  # noqa: F401


def _builds_it() -> int:
    return _UnusedBadMethod(10).value


def _annotates_it(x: _UnusedBadMethod) -> int:
    return x.value


@pytest.mark.parametrize("fn", [_builds_it, _annotates_it])
def test_a_method_nothing_calls_is_compiled_with_the_class(fn):
    for engine in (torch, scriptc):
        with pytest.raises(Exception, match="import statements") as caught:  # torch: NotSupportedError
            engine.jit.script(fn)
        assert "_UnusedBadMethod' is being compiled since it was called from" in str(caught.value)


class _Tree:
    def __init__(self):
        self.parent = scriptc.jit.annotate(Optional[_Tree], None)


class _TorchTree:
    def __init__(self):
        self.parent = torch.jit.annotate(Optional[_TorchTree], None)


def _plants(engine, tree):
    def plant() -> int:
        tree()
        return 1
    return plant


@pytest.mark.parametrize("engine, tree", [(torch, _TorchTree), (scriptc, _Tree)])
def test_a_class_holding_instances_of_itself_is_refused_in_torchs_words(engine, tree):
    with pytest.raises(RuntimeError, match="Classes that recursively contain instances of themselves are not yet "
                                           "supported") as caught:
        engine.jit.script(_plants(engine, tree))
    # (torch's class names carry the module's path too)
    assert re.search(rf"Assignment to attribute 'parent' cannot be of a type that contains class '__torch__\.[\w.]*"
                     rf"{tree.__name__}", str(caught.value))


def test_a_class_with_a_list_of_other_objects_is_accepted():
    @scriptc.jit.script
    class Leaf:
        def __init__(self, value: int):
            self.value = value

    @scriptc.jit.script
    class Branch:
        def __init__(self):
            self.leaves = [Leaf(1), Leaf(2)]

        def total(self) -> int:
            return sum([leaf.value for leaf in self.leaves])

    @scriptc.jit.script
    def count() -> int:
        return Branch().total()

    assert count() == 3
