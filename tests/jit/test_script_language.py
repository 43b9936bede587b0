"""TorchScript's language, construct by construct: each function of language_corpus.py scripted and
compared with Python running it (values and types: an int stays an int, a tuple a tuple), then
saved and run by the standalone runtime (scriptc.runtime.load) with the same results."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc as torch
from scriptc.jit.module_values import from_runtime
from scriptc.runtime import load as runtime_load

from .language_corpus import LANGUAGE, Color


def _arguments(args, rng):
    return tuple(a(rng) if callable(a) else a for a in args)


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def same(got, expected) -> None:
    """Equal values of the same Python types (tensors by dtype, shape and values)."""
    if isinstance(expected, torch.Size):  # TorchScript's x.shape is a List[int]
        expected = list(expected)
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
        return
    assert type(got) is type(expected), f"{got!r} is a {type(got).__name__}, expected a {type(expected).__name__}"
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for k in expected:
            same(got[k], expected[k])
    elif isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == expected


def _outcome(fn, args):
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the scripted function must fail where Python does
        return "error", exc


@pytest.mark.parametrize("name", sorted(LANGUAGE))
def test_scripted_equals_python(name):
    fn, cases = LANGUAGE[name]
    scripted = torch.jit.script(fn)
    rng = np.random.default_rng(0)
    for args in cases:
        args = _arguments(args, rng)
        expected = _outcome(fn, _copy(args))
        got = _outcome(scripted, _copy(args))
        assert got[0] == expected[0], (args, expected, got)
        if expected[0] == "ok":
            same(got[1], expected[1])


@pytest.mark.parametrize("name", sorted(LANGUAGE))
def test_saved_archive_runs_in_the_runtime(name, tmp_path):
    fn, cases = LANGUAGE[name]
    scripted = torch.jit.script(fn)
    path = tmp_path / f"{name}.sc"
    torch.jit.save(scripted, path)
    model = runtime_load(path, jit=False, prime=False)
    rng = np.random.default_rng(0)
    for args in cases:
        args = _arguments(args, rng)
        expected = _outcome(scripted, _copy(args))
        got = _outcome(model, [a.numpy().copy() if isinstance(a, torch.Tensor) else _copy(a) for a in args])
        assert got[0] == expected[0], (args, expected, got)
        if expected[0] == "ok":
            same(from_runtime(got[1]), expected[1])


def test_raised_messages_are_formatted_when_raised_in_script_and_archives(tmp_path):
    fn = LANGUAGE["formatted_messages"][0]
    scripted = torch.jit.script(fn)
    torch.jit.save(scripted, tmp_path / "messages.sc")
    loaded = runtime_load(tmp_path / "messages.sc", jit=False, prime=False)
    for args, kind in (((3, [1, 2]), AssertionError), ((101, []), ValueError), ((-1, [2]), RuntimeError)):
        with pytest.raises(kind) as python:
            fn(*args)
        for compiled in (scripted, loaded):
            with pytest.raises(torch.jit.Error) as script:
                compiled(*args)
            # TorchScript names an exception raised with arguments by its module (an assert's by its name)
            module = "" if kind is AssertionError else "builtins."
            assert str(script.value).splitlines()[-1] == f"{module}{kind.__name__}: {python.value}"


def test_compiled_runtime_plans_agree_with_the_interpreter(tmp_path):
    for name in ("loops_with_exits", "tensor_arithmetic", "list_methods", "tensor_setitem"):
        fn, cases = LANGUAGE[name]
        path = tmp_path / f"{name}.sc"
        torch.jit.save(torch.jit.script(fn), path)
        interpreted, compiled = runtime_load(path, jit=False, prime=False), runtime_load(path, prime=False)
        rng = np.random.default_rng(1)
        for args in cases:
            args = [a.numpy() if isinstance(a, torch.Tensor) else a for a in _arguments(args, rng)]
            same(from_runtime(compiled(*_copy(args))), from_runtime(interpreted(*_copy(args))))


_INTS = st.integers(-10 ** 6, 10 ** 6)
_NONZERO = _INTS.filter(lambda v: v != 0)


@settings(max_examples=40, deadline=None)
@given(_INTS, _NONZERO)
def test_int_division_and_modulo_are_pythons(a, b):
    scripted = _scripted(LANGUAGE["int_semantics"][0])
    same(scripted(a, b), LANGUAGE["int_semantics"][0](a, b))


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="ab xyz\t-", max_size=12))
def test_string_methods_are_pythons(s):
    fn = LANGUAGE["string_methods"][0]
    same(_scripted(fn)(s), fn(s))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=8))
def test_list_methods_are_pythons(xs):
    fn = LANGUAGE["list_methods"][0]
    xs = xs + [7]  # list.index(7) and list.remove(9) need them present
    same(_scripted(fn)(list(xs)), fn(list(xs)))


_SCRIPTED: dict = {}


def _scripted(fn):
    if fn not in _SCRIPTED:
        _SCRIPTED[fn] = torch.jit.script(fn)
    return _SCRIPTED[fn]


def test_int_power_is_a_float_as_in_torchscript():
    def power(a: int, b: int):
        return a ** b

    scripted = _scripted(power)
    for a, b in ((2, 10), (3, -2), (-2, 3)):
        same(scripted(a, b), float(a ** b))


def test_values_print_as_torchscript_prints_them(capsys):
    """Where TorchScript differs from Python (its str() of floats and of containers, dict.popitem
    taking the first item), scripted code does as TorchScript does; the expected values are real
    torch.jit.script's."""

    def render(x: float, words: List[str], d: Dict[str, int]) -> List[str]:
        print(x, words, d, (1, "a"), True, None)
        return [str(x), str(-x), str(x / 3), str([x, 0.1]), str(words), str(d), "%s|%d" % (x, x),
                "{} {}".format(x, words), f"{x}", str(complex(x, -1.0)), str(1e20)]

    got = _scripted(render)(2.0, ["a", "b"], {"k": 1})
    assert got == ["2.", "-2.", "0.66666666666666663", "[2., 0.10000000000000001]", "[a, b]", "{k: 1}", "2.|2",
                   "2. [a, b]", "2.", "2.-1.j", "1e+20"]
    assert capsys.readouterr().out == "2. [a, b] {k: 1} (1, a) True None\n"

    def first_item(d: Dict[str, int]) -> Tuple[Tuple[str, int], int]:
        return d.popitem(), len(d)

    assert _scripted(first_item)({"a": 1, "b": 2}) == (("a", 1), 1)


def test_a_bool_passed_as_an_ops_scalar_is_an_int_there():
    # real torch.jit.script's results: True is the Scalar 1 (an int), so bool tensors promote to int64
    def with_bools(x: torch.Tensor, flag: bool):
        return (x + True, x * flag, x & True, torch.where(x > 0, x, True), torch.full([2], True),
                torch.add(x, True, alpha=True), x.eq(True), x.masked_fill(x > 1, True))

    got = _scripted(with_bools)(torch.tensor([True, False]), True)
    expected = [([2, 1], "int64"), ([1, 0], "int64"), ([1, 0], "int64"), ([1, 1], "int64"), ([1, 1], "int64"),
                ([2, 1], "int64"), ([True, False], "bool"), ([True, False], "bool")]
    assert [(v.tolist(), v.dtype.name) for v in got] == expected
    assert _scripted(with_bools)(torch.tensor([1, 2]), False)[1].tolist() == [0, 0]

    def power_of_true(x: torch.Tensor) -> torch.Tensor:
        return True ** x

    assert _scripted(power_of_true)(torch.tensor([True, False])).dtype == torch.int64  # as torch's


def test_a_dtype_prints_as_its_scalar_type_number(capsys):
    # real torch.jit.script's: a dtype is an int in TorchScript, so str() and print() give the number
    def dtype_text(x: torch.Tensor) -> List[str]:
        print(x.dtype)
        return [str(x.dtype), "%s" % (x.dtype,), "{}".format(x.dtype), f"{x.dtype}", str((x.dtype, 1)),
                str({"a": x.dtype})]

    assert _scripted(dtype_text)(torch.ones(2, dtype=torch.int64)) == ["4", "4", "4", "4", "(4, 1)", "{a: 4}"]
    assert capsys.readouterr().out == "4\n"


def test_a_negative_zero_prints_as_zero_and_a_nan_with_its_sign():
    # real torch.jit.script's: whole floats print through an int (no sign on zero), NaN as C++ prints it
    def signs(x: float) -> List[str]:
        return [str(-x), str(x * -1.0), str([-x]), "{}".format(-x), str(float("nan")), str(-float("nan")),
                str(-float("inf"))]

    assert _scripted(signs)(0.0) == ["0.", "0.", "[0.]", "0.", "nan", "-nan", "-inf"]


@pytest.mark.parametrize("template, value, expected", [
    ("%e|%E", (1, 2.5), "1.000000e+00|2.500000E+00"), ("%f %F", (1, 1.5), "1.000000 1.500000"),
    ("%c%c", (97, "b"), "ab"), ("%i%% of %s", (5, [1]), "5% of [1]"),
    ("%a", "x", "The specifier %a is not supported in TorchScript format strings"),
    ("%5d", 3, "The specifier %5 is not supported in TorchScript format strings"),
    ("tail %", "x", "Incomplete format specifier"), ("%s %s", "x", "Too few arguments for format string"),
    ("%s", ("x", "y"), "Too many arguments for format string"),
    ("%d", "1", "%d requires a number for formatting, but got String"),
    ("%c", "foo", "%c requires an int or char for formatting, but got String"),
])
def test_percent_formatting_is_torchscripts(template, value, expected):
    """TorchScript's `%`: one letter per conversion (no flags or widths), its errors (real torch's)."""
    def fmt(template: str, value: Any) -> str:
        return template % value

    if expected.startswith(("The specifier", "Incomplete", "Too", "%")):
        with pytest.raises(RuntimeError, match=re.escape(expected)):
            _scripted(fmt)(template, value)
    else:
        assert _scripted(fmt)(template, value) == expected


def test_a_zero_dim_tensor_passes_where_an_op_declares_a_number():
    """TorchScript reads a 0-d tensor as the int/float/Scalar an op's schema declares (real torch's
    results and errors), but only where no overload takes the tensor itself."""
    def unsqueeze(x: torch.Tensor, dim: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(dim)

    def addcmul(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return x.addcmul(t, t, value=t)

    assert tuple(_scripted(unsqueeze)(torch.zeros(3), torch.tensor(0)).shape) == (1, 3)
    np.testing.assert_allclose(_scripted(addcmul)(torch.zeros(2), torch.tensor(1.5)).numpy(), [3.375, 3.375])
    with pytest.raises(RuntimeError, match="Cannot input a tensor of type Float as an integral argument"):
        _scripted(unsqueeze)(torch.zeros(3), torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="Cannot input a tensor of dimension other than 0 as a scalar argument"):
        _scripted(addcmul)(torch.zeros(2), torch.tensor([2.0]))


def test_hash_is_by_value_as_torchscripts():
    def same_hash(a: float, b: float) -> bool:
        return hash(a) == hash(b)

    assert _scripted(same_hash)(float("nan"), float("nan")) and _scripted(same_hash)(1.5, 1.5)
    assert not _scripted(same_hash)(1.5, 2.5)


def test_functions_that_always_raise():
    """No return on any path: None, or the declared type; a raise's arguments are written as
    TorchScript writes them."""
    def no_declaration():
        raise RuntimeError("hello", "goodbye")

    def declared() -> torch.Tensor:
        raise ValueError

    for fn, message in ((no_declaration, "RuntimeError: (hello, goodbye)"), (declared, "ValueError")):
        scripted = torch.jit.script(fn)
        with pytest.raises(RuntimeError, match=re.escape(message)):
            scripted()
    assert str(torch.jit.script(no_declaration).graph.outputs[0].type) == "None"
    assert str(torch.jit.script(declared).graph.outputs[0].type) == "Tensor"


_FAVOURITE = Color.GREEN


def test_enum_members_in_any_and_as_globals():
    def is_color(x: Any) -> bool:
        return isinstance(x, Color)

    def favourite() -> int:
        return _FAVOURITE.value

    assert _scripted(is_color)(Color.RED) and not _scripted(is_color)(1)
    assert _scripted(favourite)() == Color.GREEN.value


def test_isinstance_refines_any():
    def describe(x: Any) -> str:
        if isinstance(x, str):
            return x
        if isinstance(x, List[int]):
            return str(len(x))
        if isinstance(x, (int, float)):
            return "number"
        return "other"

    assert [_scripted(describe)(v) for v in ("s", [1, 2], 3, 1.5, None)] == ["s", "2", "number", "number", "other"]


def test_in_place_ops_write_into_their_tensor_in_its_dtype(tmp_path):
    def scale(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
        x *= factor
        x.add_(factor)
        return x

    factor = torch.tensor([2.0], dtype=torch.float64)
    x = torch.ones(2, 2)
    result = _scripted(scale)(x, factor)
    assert result.dtype == x.dtype == torch.float32
    np.testing.assert_allclose(x.numpy(), np.full((2, 2), 4.0))
    torch.jit.save(_scripted(scale), tmp_path / "scale.sc")
    array = np.ones((2, 2), np.float32)
    runtime_load(tmp_path / "scale.sc", jit=False, prime=False)(array, factor.numpy())
    np.testing.assert_allclose(array, np.full((2, 2), 4.0))


def test_zero_to_a_negative_power_raises_as_torchscript():
    def power(a: float, b: int) -> float:
        return a ** b

    assert _scripted(power)(2.0, -2) == 0.25
    with pytest.raises(RuntimeError, match="0.0 cannot be raised to a negative power"):
        _scripted(power)(0.0, -2)



def _clamped_span(box: torch.Tensor, width: int):
    # torchvision's paste_mask_in_image: max(box[0], 0), min(box[2] + 1, im_w)
    start = max(box[0], 0)
    end = min(box[2] + 1, width)
    return start, end, end - start, max(box[1], 0.5)


def test_builtin_max_of_a_tensor_and_a_number_is_a_number():
    # torch 2.13 scripts it as prim::max of ints (and of floats beside a float), the tensor read as one
    result = torch.jit.script(_clamped_span)(torch.tensor([-3, 2, 7, 9]), 5)
    assert result == (0, 5, 5, 2.0) and [type(v) for v in result] == [int, int, int, float]


def _extremes_of_tensors(a: torch.Tensor, b: torch.Tensor):
    return max(a, b), min(a, b)


@pytest.mark.parametrize("a, b", [(4, 3), (-2, 7), (1.5, 3.7), (True, 2), ([2], [3])])
def test_builtin_max_of_two_tensors_is_torchs_int(a, b):
    # torch 2.13: prim::max/min of ints, each tensor read by IntImplicit (0-d integral tensors only)
    real = pytest.importorskip("torch")
    results = []
    for engine in (torch, real):
        scripted = engine.jit.script(_extremes_of_tensors)
        try:
            results.append(scripted(engine.tensor(a), engine.tensor(b)))
        except RuntimeError as error:
            results.append(str(error).strip().splitlines()[-1].removeprefix("RuntimeError: "))
    assert results[0] == results[1]
    assert not isinstance(results[0], tuple) or [type(v) for v in results[0]] == [int, int]


def _tensor_bounds(mask: torch.Tensor, box: torch.Tensor):
    # torchvision's paste_mask_in_image: mask[(y_0 - box[1]) : (y_1 - box[1]), ...]
    top = max(box[1], 0)
    return mask[(top - box[1]):(4 - box[1]), box[0]:], [1, 2, 3, 4][box[0]:]


def test_a_tensor_slice_bound_is_read_as_an_int():
    mask, box = torch.arange(36).reshape(6, 6), torch.tensor([1, -1, 3, 4])
    rows, items = torch.jit.script(_tensor_bounds)(mask, box)
    assert torch.equal(rows, mask[1:5, 1:]) and items == [2, 3, 4]
