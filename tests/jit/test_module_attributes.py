"""Module attributes in scripted code: properties (getters and setters), __jit_ignored_attributes__ and
__jit_unused_properties__, as torch treats them."""
import io
from typing import List, Optional

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
    assert scripted.a == eager.a
    assert scripted_from.a == 3  # (the scripted module's state is a copy, as torch's)


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
    assert scripted.seen == [1, 2, 3]


def _holding_nones(engine):
    class Holder(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.nested = [[engine.tensor([3.0, 2.0]), None]]
            self.first_none = [None, engine.tensor([1.0])]
            self.counts = {"a": 1, "b": None}
            self.pairs = [(1, "a"), (2, None)]

        def forward(self, x):
            t = self.nested[0][0]
            assert t is not None
            u = self.first_none[1]
            assert u is not None
            return t * x, u + x, self.nested[0][1] is None, self.counts, self.pairs

    return Holder()


def test_attribute_containers_holding_none_are_typed_as_torch_types_them():
    """[t, None] is a List[Optional[Tensor]] (its first item's type was taken for all: a frozen module
    holding one could not be saved), {"b": None} a Dict[str, Optional[int]] (upstream
    test_freezing.test_freeze_module)."""
    real_torch = pytest.importorskip("torch")
    x = [1.0, 2.0]

    def run(engine):
        scripted = engine.jit.script(_holding_nones(engine))
        frozen = engine.jit.freeze(scripted.eval())
        buffer = io.BytesIO()
        engine.jit.save(frozen, buffer)
        buffer.seek(0)
        results = [m(engine.tensor(x)) for m in (scripted, frozen, engine.jit.load(buffer))]
        return [(a.tolist(), b.tolist(), *rest) for a, b, *rest in results]

    ours, theirs = run(torch), run(real_torch)
    assert ours == theirs
    assert ours[0] == ([3.0, 4.0], [2.0, 3.0], True, {"a": 1, "b": None}, [(1, "a"), (2, None)])


class _LevelMapper:
    def __init__(self, k_min: int, k_max: int, scale: float):
        self.k_min = k_min
        self.k_max = k_max
        self.scale = scale

    def __call__(self, levels: List[torch.Tensor]) -> torch.Tensor:
        return torch.clamp(levels[0] * self.scale, min=self.k_min, max=self.k_max)


class _SetsUpOnFirstCall(torch.nn.Module):
    # torchvision's MultiScaleRoIAlign: both attributes None until forward sets them, in one tuple assignment
    __annotations__ = {"scales": Optional[List[float]], "map_levels": Optional[_LevelMapper]}

    def __init__(self):
        super().__init__()
        self.scales = None
        self.map_levels = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scales is None or self.map_levels is None:
            self.scales, self.map_levels = [2.0], _LevelMapper(0, 3, 2.0)
        mapper = self.map_levels
        scales = self.scales
        assert mapper is not None and scales is not None
        return mapper([x]) * scales[0]


def test_attributes_set_by_a_tuple_assignment_are_read_at_run_time():
    x = torch.tensor([0.25, 1.0, 3.0])
    expected = _SetsUpOnFirstCall()(x)
    module = _SetsUpOnFirstCall()
    scripted = torch.jit.script(module)
    assert torch.equal(scripted(x), expected) and torch.equal(scripted(x), expected)


def test_an_object_scripted_code_stores_reads_back_as_its_python_class():
    x = torch.tensor([0.25, 1.0, 3.0])
    module = _SetsUpOnFirstCall()
    scripted = torch.jit.script(module)
    scripted(x)
    assert type(scripted.map_levels) is _LevelMapper and scripted.map_levels.k_max == 3 and scripted.scales == [2.0]
    assert module.map_levels is None  # (the Python module keeps its own state, as torch's)
    assert torch.equal(module(x), scripted(x))



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


class _Matcher:
    # torchvision's det_utils.Matcher: a plain class called through its __call__
    def __init__(self, high: float):
        self.below = -1
        self.high = high

    def __call__(self, quality: torch.Tensor) -> torch.Tensor:
        return torch.where(quality >= self.high, quality, torch.full_like(quality, float(self.below)))


class _HoldsAMatcher(torch.nn.Module):
    __annotations__ = {"matcher": _Matcher}

    def __init__(self):
        super().__init__()
        self.matcher = _Matcher(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.matcher(x)


def test_a_callable_object_attribute_is_called_through_its_compiled_call():
    module = _HoldsAMatcher()
    x = torch.tensor([0.2, 0.7, 0.5])
    assert torch.equal(torch.jit.script(module)(x), module(x))
