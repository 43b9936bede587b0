"""Module attributes annotated in __init__ (scriptc/jit/frontend/instance_annotations.py and the
module attribute typing in compile/context.py), against torch 2.13 (upstream test_scriptmod_ann).
No `from __future__ import annotations` here: torch reads class-body annotations as objects."""

import warnings
from typing import Dict, List, Optional

import pytest

import scriptc

torch = pytest.importorskip("torch")

LOST = "doesn't support instance-level annotations on empty non-base types"


def _forward(self, x: Optional[List[int]]):
    self.x = x
    return 1


def _annotated_empty_list(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x: List[int] = []
        forward = _forward
    return M()


def _annotated_empty_dict(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x: Dict[str, int] = {}
        forward = _forward
    return M()


def _annotated_none(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x: Optional[List[int]] = None
        forward = _forward
    return M()


def _jit_annotated_empty_list(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x = engine.jit.annotate(List[int], [])
        forward = _forward
    return M()


def _jit_annotated_none(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x = engine.jit.annotate(Optional[List[int]], None)
        forward = _forward
    return M()


def _plain_empty_list(engine):
    class M(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.x = []
        forward = _forward
    return M()


@pytest.mark.parametrize("init, warns, message", [
    (_annotated_empty_list, True, "Tried to set nonexistent attribute: x"),
    (_annotated_empty_dict, True, "Tried to set nonexistent attribute: x"),
    (_annotated_none, True, "Wrong type for attribute assignment"),
    (_jit_annotated_empty_list, True, "Tried to set nonexistent attribute: x"),
    (_jit_annotated_none, True, "Wrong type for attribute assignment"),
    (_plain_empty_list, False, "Tried to set nonexistent attribute: x"),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_lost_instance_annotations_warn_and_refuse_as_torch(init, warns, message):
    """An annotation in __init__ on an empty container or None is lost (the attribute is typed from
    its value: an empty one has no type, None is NoneType): torch warns when scripting, and the
    assignment in forward is its error."""
    for engine in (scriptc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match=message):
                engine.jit.script(init(engine))
        assert any(LOST in str(w.message) for w in caught) == warns, engine.__name__


def test_class_level_annotations_are_kept_without_a_warning():
    def run(engine):
        class M(engine.nn.Module):
            x: List[int]
            y: Optional[int]

            def __init__(self):
                super().__init__()
                self.x: List[int] = []
                self.y = None

            def forward(self, x: List[int]):
                self.x = x
                self.y = len(x)
                return self.x, self.y

        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*" + LOST)
            return engine.jit.script(M())([1, 2])

    assert run(scriptc) == run(torch) == ([1, 2], 2)


def test_a_none_attribute_is_none_typed_in_scripted_code():
    def run(engine):
        class M(engine.nn.Module):
            def __init__(self):
                super().__init__()
                self.x = None

            def forward(self, flag: bool):
                self.x = None
                return self.x is None and flag

        return engine.jit.script(M())(True)

    assert run(scriptc) is run(torch) is True
