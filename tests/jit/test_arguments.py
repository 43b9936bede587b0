"""Arguments of calls from Python into scripted code (scriptc/jit/arguments.py)."""

import enum
import re
from typing import Dict, List, Optional, Tuple, Union

import pytest

import scriptc as torch
import scriptc.nn.functional as F
from scriptc.nn.common_types import _size_2_t, _size_3_t


def _pair_sum(x: _size_2_t) -> int:
    return x[0] + x[1]


def _float_pair_sum(x: F.BroadcastingList2[float]) -> float:
    return x[0] + x[1]


def _optional_triple(x: Optional[F.BroadcastingList3[int]]) -> List[int]:
    if x is None:
        return [0]
    return x


@pytest.mark.parametrize("fn, argument, expected", [
    (_pair_sum, 4, 8), (_pair_sum, (1, 2), 3), (_pair_sum, True, 2),
    (_float_pair_sum, 4.5, 9.0), (_float_pair_sum, [1.0, 2.5], 3.5),
    (_optional_triple, 2, [2, 2, 2]), (_optional_triple, None, [0]), (_optional_triple, [1], [1]),
])
def test_a_number_from_python_stands_for_n_of_it_for_a_broadcasting_list_parameter(fn, argument, expected):
    got = torch.jit.script(fn)(argument)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("fn, argument, found", [
    (_float_pair_sum, 3, "int"), (_pair_sum, 4.0, "float"), (_pair_sum, torch.tensor(3), "Tensor"),
    (_float_pair_sum, "a", "str"),
])
def test_only_a_number_of_the_element_kind_broadcasts(fn, argument, found):
    # as torch's binding: an int is no float here, and a one-element tensor is no number
    expected = "List[float]" if fn is _float_pair_sum else "List[int]"
    message = f"Expected a value of type '{expected}' for argument 'x' but instead found type '{found}'"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.jit.script(fn)(argument)


class _Window(torch.nn.Module):
    def forward(self, x: torch.Tensor, size: _size_3_t) -> List[int]:
        return [x.dim()] + size

    @torch.jit.export
    def pair(self, size: F.BroadcastingList2[int]) -> int:
        return size[0] * size[1]


def test_module_methods_broadcast_a_number_for_their_broadcasting_list_parameters():
    scripted = torch.jit.script(_Window())
    assert scripted(torch.zeros(2), 5) == [1, 5, 5, 5]
    assert scripted(torch.zeros(2), [1, 2, 3]) == [1, 1, 2, 3]
    assert scripted.pair(3) == 9


def test_size_n_t_parameters_broadcast_in_calls_from_scripted_code():
    def caller() -> int:
        return _pair_sum(5) + _pair_sum((1, 2))

    assert torch.jit.script(caller)() == 13


def _dtypes(x: torch.Tensor) -> Tuple[torch.dtype, List[torch.dtype], Dict[str, torch.dtype], Optional[torch.dtype]]:
    return x.dtype, [x.dtype, torch.float64], {"d": x.dtype}, x.dtype


@pytest.mark.parametrize("dtype, number", [(torch.float32, 6), (torch.int64, 4), (torch.bool, 11),
                                           (torch.float64, 7), (torch.uint8, 0)])
def test_a_dtype_returned_to_python_is_its_scalar_type_number(dtype, number):
    # torch.jit.script(f)(x) with f returning x.dtype gives 6 for float32, in containers too
    assert torch.jit.script(_dtypes)(torch.zeros(2, dtype=dtype)) == (number, [number, 7], {"d": number}, number)


def _converted(x: torch.Tensor, d: torch.dtype) -> torch.Tensor:
    return x.to(d)


def test_a_scalar_type_number_from_python_is_a_dtype_argument():
    scripted = torch.jit.script(_converted)
    assert scripted(torch.ones(2), 4).dtype == torch.int64
    assert scripted(torch.ones(2), torch.float64).dtype == torch.float64
    with pytest.raises(RuntimeError, match="Expected a value of type 'ScalarType' for argument 'd'"):
        scripted(torch.ones(2), 99)


def _int_dtypes(x: torch.Tensor, d: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return x.to(d), x.to(6), torch.zeros(2, dtype=d), x.sum(dtype=7)


def test_an_int_inside_scripted_code_is_a_dtype_where_one_is_declared():
    # TorchScript's dtypes are ints: x.to(6), dtype=d for an int d
    results = torch.jit.script(_int_dtypes)(torch.ones(2, dtype=torch.int64), 4)
    assert [r.dtype for r in results] == [torch.int64, torch.float32, torch.int64, torch.float64]


def test_an_int_dtype_matches_torch():
    real = pytest.importorskip("torch")
    want = real.jit.script(_int_dtypes_real(real))(real.ones(2, dtype=real.int64), 0)
    got = torch.jit.script(_int_dtypes)(torch.ones(2, dtype=torch.int64), 0)
    assert [str(r.dtype).split(".")[1] for r in got] == [str(r.dtype).split(".")[1] for r in want]


def _int_dtypes_real(real):
    def int_dtypes(x: real.Tensor, d: int) -> Tuple[real.Tensor, real.Tensor, real.Tensor, real.Tensor]:
        return x.to(d), x.to(6), real.zeros(2, dtype=d), x.sum(dtype=7)
    return int_dtypes


def test_an_int_that_is_no_scalar_type_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="ScalarType 99 is not a dtype"):
        torch.jit.script(_int_dtypes)(torch.ones(2), 99)



class _DtypeAsInt(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d = torch.float64

    def forward(self, x):
        return self.number(x), x.dtype == 6, 4 != x.dtype, x.to(self.d)

    def number(self, x) -> int:
        return x.dtype


def test_a_dtype_is_an_int_where_scripted_code_takes_one():
    # `-> int` of a dtype, dtype == number, and a dtype attribute read from Python: ints, as in torch
    scripted = torch.jit.script(_DtypeAsInt())
    number, same, other, y = scripted(torch.ones(2))
    assert (number, same, other, y.dtype, scripted.d) == (6, True, True, torch.float64, 7)


def test_a_dtype_as_an_int_matches_torch():
    real = pytest.importorskip("torch")

    class Real(real.nn.Module):
        def __init__(self):
            super().__init__()
            self.d = real.float64

        def forward(self, x):
            return self.number(x), x.dtype == 6, 4 != x.dtype, x.to(self.d)

        def number(self, x) -> int:
            return x.dtype

    want = real.jit.script(Real())
    got = torch.jit.script(_DtypeAsInt())
    for dtype in ("float32", "int64"):
        expected, ours = want(real.ones(2, dtype=getattr(real, dtype))), got(torch.ones(2, dtype=getattr(torch, dtype)))
        assert ours[:3] == expected[:3] and str(ours[3].dtype).split(".")[1] == str(expected[3].dtype).split(".")[1]
    assert got.d == want.d


def _dtype_pair(x: torch.Tensor) -> Tuple[int, float]:
    pair = (x.dtype, 2.0)
    return pair


def test_a_tuple_holding_a_dtype_is_a_tuple_of_ints_where_one_is_declared():
    # real torch.jit.script's: (6, 2.0)
    assert torch.jit.script(_dtype_pair)(torch.ones(2)) == (6, 2.0)


class _Shade(enum.Enum):
    DARK = 1
    LIGHT = 2


def _shade_or_name(x: Union[str, _Shade]) -> str:
    return "x"


def test_a_union_with_an_enum_names_it_as_torch_in_the_refusal():
    """Expected a member of Union[__torch__.<module>._Shade, str] (it was Enum(_Shade, int)) (upstream
    test_union.test_union_with_enum)."""
    real_torch = pytest.importorskip("torch")
    messages = []
    for engine in (torch, real_torch):
        with pytest.raises(RuntimeError) as caught:
            engine.jit.script(_shade_or_name)(1)
        messages.append(str(caught.value))
    expected = "Expected a member of Union[__torch__.tests.jit.test_arguments._Shade, str] but instead found type int"
    assert all(expected in message for message in messages)


def _int_and_list(n: int, counts: List[int], maybe: Optional[int]) -> Tuple[int, List[int], Optional[int]]:
    return n, counts, maybe


def test_a_bool_is_an_int_argument_of_zero_or_one_as_torch_casts_it():
    # torch.jit.script(f)(True) for an int parameter passes 1
    result = torch.jit.script(_int_and_list)(True, [False, 2], True)
    assert result == (1, [0, 2], 1) and type(result[0]) is int


def _int_and_str(a: int, b: str) -> int:
    return a


class _IntAndStr(torch.nn.Module):
    def forward(self, a: int, b: str) -> int:
        return a


@pytest.mark.parametrize("args", [(1, 2), ("x", "y")])
def test_a_mistyped_argument_names_the_function_and_its_position_as_torch_does(args):
    real = pytest.importorskip("torch")

    class RealIntAndStr(real.nn.Module):
        def forward(self, a: int, b: str) -> int:
            return a

    for engine, module in ((real, RealIntAndStr()), (torch, _IntAndStr())):
        messages = []
        for compiled in (engine.jit.script(_int_and_str), engine.jit.script(module)):
            with pytest.raises(RuntimeError) as raised:
                compiled(*args)
            messages.append(str(raised.value).splitlines()[:3])
        if engine is real:
            expected = messages  # "f() Expected a value ...", "Position: 0" (a method's counts self), "Value: 'x'"
        else:
            assert messages == expected


def _script_object_for_a_module_interface(engine):
    @engine.jit.interface
    class Doubler(engine.nn.Module):
        def forward(self, x: engine.Tensor) -> engine.Tensor:
            pass

    @engine.jit.script
    class NotAModule:
        def forward(self, x: engine.Tensor) -> engine.Tensor:
            return x * 2

    globals()["_Doubler"] = Doubler  # (an interface an annotation names is found among the globals)

    def passes_through(m: _Doubler) -> _Doubler:  # noqa: F821
        return m

    scripted = engine.jit.script(passes_through)
    with pytest.raises(RuntimeError) as refused:
        scripted(NotAModule())
    return str(refused.value)


def test_a_script_object_for_a_module_interface_is_refused_in_torchs_words():
    real_torch = pytest.importorskip("torch")
    words = "only ScriptModule class can be subtype of module interface"
    assert words in _script_object_for_a_module_interface(torch)
    assert words in _script_object_for_a_module_interface(real_torch)
