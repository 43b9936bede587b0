"""Class interfaces (a @torch.jit.interface class that is no nn.Module): values of any script class
with its methods, calls dispatched on the object's class at run time."""

import io
from typing import List

import pytest

import scriptc as torch
from scriptc import Tensor


@torch.jit.script
class _Doubler:
    def __init__(self):
        self.k = 2

    def apply(self, x: Tensor) -> Tensor:
        return x * self.k


@torch.jit.script
class _Shifter:
    def __init__(self, by: float):
        self.by = by

    def apply(self, x: Tensor) -> Tensor:
        return x + self.by


@torch.jit.script
class _Unrelated:
    def __init__(self):
        self.k = 1

    def other(self, x: Tensor) -> Tensor:
        return x


@torch.jit.script
class _WrongTypes:
    def __init__(self):
        self.k = 1

    def apply(self, x: int) -> int:
        return x


@torch.jit.interface
class _Transform:
    def apply(self, x: Tensor) -> Tensor:
        pass


def _apply_all(x: Tensor) -> Tensor:
    items = torch.jit.annotate(List[_Transform], [_Doubler(), _Shifter(0.5), _Doubler()])
    for item in items:
        x = item.apply(x)
    return x


def _as_transform(item: _Transform) -> _Transform:
    return item


def _apply_one(item: _Transform, x: Tensor) -> Tensor:
    return item.apply(x)


def _missing_method():
    return _as_transform(_Unrelated())


def _wrong_types():
    return _as_transform(_WrongTypes())


def test_calls_through_a_class_interface_run_each_objects_method():
    x = torch.tensor([1.0, -1.0])
    assert torch.jit.script(_apply_all)(x).tolist() == _apply_all(x).tolist() == [5.0, -3.0]
    apply_one = torch.jit.script(_apply_one)
    assert apply_one(_Shifter(2.0), x).tolist() == [3.0, 1.0]  # objects made in Python, passed in
    assert apply_one(_Doubler(), x).tolist() == [2.0, -2.0]


@pytest.mark.parametrize("fn, message", [(_missing_method, "does not have method 'apply'"),
                                         (_wrong_types, "is not compatible with interface")])
def test_an_object_without_the_interfaces_methods_is_refused_in_torchs_words(fn, message):
    with pytest.raises(RuntimeError, match=message):
        torch.jit.script(fn)


class _Holder(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return _apply_all(x)


def test_a_module_calling_through_a_class_interface_saves_and_loads():
    scripted = torch.jit.script(_Holder())
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    x = torch.tensor([1.0, -1.0])
    assert torch.jit.load(buffer)(x).tolist() == scripted(x).tolist() == [5.0, -3.0]
    assert any("Interface(_Transform)" in str(graph) for graph in scripted._functions.values())


def test_the_classes_an_interface_call_picks_from_keep_the_order_they_were_scripted_in():
    """(so that the chain of prim::isinstance a call compiles to is the same graph in every run)"""
    from scriptc.jit.api import SCRIPTED_CLASSES

    ours = [cls for cls in SCRIPTED_CLASSES if cls in (_Doubler, _Shifter, _Unrelated, _WrongTypes)]
    assert ours == [_Doubler, _Shifter, _Unrelated, _WrongTypes]
    graph = str(torch.jit.script(_apply_all).graph)
    assert graph.index("_Doubler") < graph.index("_Shifter")


def _doubled_plus_one_if_doubler(t: _Transform, x: Tensor) -> Tensor:
    if isinstance(t, _Doubler):
        return t.apply(x) + 1
    return x


def test_isinstance_of_a_class_interfaces_value_checks_the_objects_class_at_run_time():
    scripted = torch.jit.script(_doubled_plus_one_if_doubler)
    x = torch.tensor([1.0, 2.0])
    assert scripted(_Doubler(), x).tolist() == [3.0, 5.0]
    assert scripted(_Shifter(0.5), x).tolist() == [1.0, 2.0]


def _reads_an_attribute(t: _Transform) -> int:
    return t.k


def _calls_a_method_it_lacks(t: _Transform, x: Tensor) -> Tensor:
    return t.missing(x)


@pytest.mark.parametrize("fn, name", [(_reads_an_attribute, "k"), (_calls_a_method_it_lacks, "missing")])
def test_a_name_the_interface_does_not_declare_is_refused_in_torchs_words(fn, name):
    with pytest.raises(RuntimeError, match=f"'__torch__._Transform' object has no attribute or method '{name}'"):
        torch.jit.script(fn)
