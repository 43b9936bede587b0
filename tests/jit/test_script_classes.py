"""@torch.jit.script classes against torch 2.13: the names the methods of one defined inside a function
see, and dataclasses (the methods torch writes for them)."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any, List, Optional, Tuple

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


@dataclasses.dataclass(order=True)
class Point:
    x: float
    y: float
    norm: float = 0.0  # (an Optional field torch compares only where its annotation is no string)

    def __post_init__(self):
        self.norm = (self.x ** 2 + self.y ** 2) ** 0.5


def _compare(x1: float, y1: float, x2: float, y2: float):
    a = Point(x1, y1)
    b = Point(x2, y2)
    return a == b, a < b, a <= b, a > b, a >= b, a.norm, b.norm


@pytest.mark.parametrize("args", [(1.0, 2.0, 1.0, 2.0), (1.0, 2.0, 1.0, 3.0), (3.0, -1.0, 1.0, 5.0)])
def test_a_dataclass_gets_the_init_and_comparisons_torch_writes_for_it(args):
    for engine in (torch, scriptc):
        engine.jit.script(Point)
    expected = torch.jit.script(_compare)(*args)
    assert scriptc.jit.script(_compare)(*args) == expected == _compare(*args)


@dataclasses.dataclass
class Scaled:
    x: float
    scale: dataclasses.InitVar[int] = 2
    total: Optional[float] = None

    def __post_init__(self, scale: int):
        self.total = self.x * scale


def test_a_dataclass_init_var_reaches_post_init_and_is_no_attribute():
    def make(x: float, k: int):
        a, b = Scaled(x), Scaled(x, k)
        return a.total, b.total, a == b, a == Scaled(x)

    assert scriptc.jit.script(make)(1.5, 3) == make(1.5, 3) == (3.0, 4.5, False, True)


def test_a_dataclass_keeps_its_own_eq_and_refuses_default_factories():
    @scriptc.jit.script
    @dataclasses.dataclass
    class ByKey:
        key: int
        payload: int

        def __eq__(self, other: "ByKey") -> bool:
            return self.key == other.key

    @scriptc.jit.script
    def same(a: int, b1: int, b2: int) -> bool:
        return ByKey(a, b1) == ByKey(a, b2)

    assert same(1, 2, 3)

    @dataclasses.dataclass
    class Listed:
        items: List[int] = dataclasses.field(default_factory=list)

    for engine in (torch, scriptc):
        with pytest.raises(NotImplementedError, match="Default factory initializers are not supported"):
            engine.jit.script(Listed)


def test_a_script_class_is_compiled_whole_when_scripted_as_torch_does():
    def define_unset():
        @scriptc.jit.script
        class Unset:
            def __init__(self, x: int):
                self.x = x

            def never_called(self, y: int):
                self.missing = y

    def define_mistyped():
        @scriptc.jit.script
        class Mistyped:
            def __init__(self, x: torch_tensor_type):  # noqa: F821
                self.x = x
                self.x = 10

    with pytest.raises(RuntimeError, match="Tried to set nonexistent attribute: missing"):
        define_unset()
    with pytest.raises(RuntimeError, match="Wrong type for attribute assignment. Expected Tensor but got int"):
        define_mistyped()


torch_tensor_type = scriptc.Tensor


@scriptc.jit.script
class _Castable:
    def __init__(self, value: float) -> None:
        self.value = value

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value)


def _casts(item: _Castable) -> Tuple[int, float, bool, bool]:
    truth = False
    if item:
        truth = True
    return int(item), float(item), bool(item), truth


def test_int_float_bool_and_conditions_call_the_class_dunders():
    scripted = scriptc.jit.script(_casts)
    assert scripted(_Castable(2.5)) == (2, 2.5, True, True)
    assert scripted(_Castable(0.0)) == (0, 0.0, False, False)


def test_a_bool_dunder_returning_another_type_is_refused():
    @scriptc.jit.script
    class _BadBool:
        def __init__(self):
            pass

        def __bool__(self):
            return (1, 2)

    def branches():
        if _BadBool():
            return 1
        return 0

    with pytest.raises(RuntimeError, match="expected a bool expression for condition"):
        scriptc.jit.script(branches)


def test_an_ignored_class_cannot_be_instantiated_in_scripted_code():
    @scriptc.jit.ignore
    class PythonOnly:
        def unscriptable(self):
            return "a" + 200

    class Builds(scriptc.nn.Module):
        def forward(self, x):
            return PythonOnly()

    with pytest.raises(scriptc.jit.frontend.FrontendError, match="Cannot instantiate class 'PythonOnly' in a script "
                                                                 "function"):
        scriptc.jit.script(Builds())


@scriptc.jit.script
class _BadEnter:
    def __init__(self):
        self.count = 1

    def __enter__(self, increment: int):
        self.count += increment

    def __exit__(self, kind: Any, value: Any, traceback: Any):
        pass


@scriptc.jit.script
class _ShortExit:
    def __init__(self):
        self.count = 1

    def __enter__(self):
        self.count += 1

    def __exit__(self, kind: Any, value: Any):
        pass


@scriptc.jit.script
class _TypedExit:
    def __init__(self):
        self.count = 1

    def __enter__(self):
        self.count += 1

    def __exit__(self, kind: Any, value: int, traceback: int):
        pass


def _enters_bad(manager: _BadEnter) -> int:
    with manager:
        pass
    return 0


def _enters_short(manager: _ShortExit) -> int:
    with manager:
        pass
    return 0


def _enters_typed(manager: _TypedExit) -> int:
    with manager:
        pass
    return 0


@pytest.mark.parametrize("fn, message", [
    (_enters_bad, "__enter__ must have only one argument and one return value"),
    (_enters_short, "__exit__ must have four arguments"),
    (_enters_typed, "argument 2 of __exit__ must have Any type"),
])
def test_context_manager_methods_are_checked_in_torchs_words(fn, message):
    with pytest.raises(RuntimeError, match=message):
        scriptc.jit.script(fn)


_Outputs = namedtuple("Outputs", ["logits", "aux"])
_OtherOutputs = namedtuple("Outputs", ["different"])
_SameOutputs = namedtuple("Outputs", ["logits", "aux"])


def test_two_namedtuples_of_one_name_in_one_script_are_refused_unless_alike():
    for engine in (scriptc, torch):
        def clash(x, y):
            # type: (_Outputs, _OtherOutputs) -> _Outputs
            return x

        with pytest.raises(RuntimeError, match=r"Can't redefine NamedTuple: __torch__\.(\w+\.)*Outputs"):
            engine.jit.script(clash)

    def alike(x, y):
        # type: (_Outputs, _SameOutputs) -> Tensor
        return x.logits + y.aux

    t = scriptc.ones(2)
    assert scriptc.jit.script(alike)(_Outputs(t, t), _SameOutputs(t, t)).tolist() == [2.0, 2.0]


class _Ranked:
    def __init__(self, x: int):
        self.x = x

    def __lt__(self, other: "_Ranked") -> bool:
        return self.x < other.x


class _WrongLt:
    def __init__(self):
        pass

    def __lt__(self, other):  # (other is a Tensor to TorchScript: no comparison of two _WrongLt)
        pass


def _sorts_ranked(reverse: bool) -> List[int]:
    items = [_Ranked(2), _Ranked(3), _Ranked(1)]
    items.sort(reverse)
    return [item.x for item in items]


def _sorts_itself_as_reverse():
    items = [_Ranked(1)]
    items.sort(items)
    return items


def _sorts_wrong_lt():
    items = [_WrongLt(), _WrongLt()]
    items.sort()
    return items


@pytest.mark.parametrize("engine", [scriptc, torch], ids=["scriptc", "torch"])
def test_sorting_objects_takes_reverse_positionally_and_needs_a_fitting_lt(engine):
    engine.jit.script(_Ranked)
    engine.jit.script(_WrongLt)
    assert engine.jit.script(_sorts_ranked)(True) == [3, 2, 1]
    with pytest.raises(RuntimeError, match="Expected a value of type 'bool' for argument 'reverse'"):
        engine.jit.script(_sorts_itself_as_reverse)
    with pytest.raises(RuntimeError, match="must define a __lt__ method with two inputs of type"):
        engine.jit.script(_sorts_wrong_lt)()  # (torch's refusal comes when it runs, scriptc's when it compiles)


class _Signed:  # (unannotated parameters are Tensors to both engines)
    def __init__(self, x):
        self.x = x

    def __neg__(self):
        self.x = -self.x
        return self

    def __mul__(self, other):
        return self.x * other

    def __invert__(self) -> int:
        return 7


def _negated_then_scaled(x):
    signed = _Signed(x)
    return -signed * x, ~signed


class _Unset:
    def __init__(self):
        self.set = 1

    def read(self) -> int:
        return self.unset


def test_unary_operators_call_the_class_and_a_missing_attribute_is_named_in_torchs_words():
    x = torch.tensor([1.0, -2.0])
    expected = torch.jit.script(_negated_then_scaled)(x)
    got = scriptc.jit.script(_negated_then_scaled)(scriptc.tensor([1.0, -2.0]))
    assert got[0].tolist() == expected[0].tolist() == [-1.0, -4.0] and got[1] == expected[1] == 7
    words = (r"'__torch__\.(\w+\.)*_Unset( \(of Python compilation unit at: \w+\))?' object has no attribute or "
             r"method 'unset'\. Did you forget to initialize an attribute in __init__\(\)\?")
    for engine in (scriptc, torch):
        with pytest.raises(RuntimeError, match=words):
            engine.jit.script(_Unset)
