"""Errors jit.script reports in torch 2.13's words, checked against torch itself."""

from __future__ import annotations

import enum
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pytest

import scriptc

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind

CHECK_CALLS = [
    ('torch._check(True, "msg", "extra")', r"torch._check\(\) expects 1 or 2 arguments, got 3"),
    ("torch._check()", r"torch._check\(\) expects 1 or 2 arguments, got 0"),
    ('torch._check(True, invalid_arg="msg")', "torch._check\\(\\) got unexpected keyword argument 'invalid_arg'"),
    ("torch._check(True, cond=False)", "got multiple values for argument 'cond'"),
    ('torch._check(message="m")', "missing required argument 'cond'"),
    ("c = 1\n    c.add(1)", "'int' object has no attribute or method 'add'"),
    ("fut = torch.jit._fork(x)", "cannot call a value"),
    ("a = dict()\n    a[1] = 2", "Arguments for call are not valid"),
    ("a, b = (1, 2, 3)", "too many values to unpack: need 2 but found 3"),
    ("a, b, c = (1, 2)", "need 3 values to unpack but found only 2"),
    ("a: List[int] = []\n    a[0] = 'no'", "Arguments for call are not valid"),
]


def _compile(engine, source: str, bare=None):
    """`source` compiled by `engine`, its `torch` being that engine (and `Bare` the given type)."""
    torch = engine  # noqa: F841  (the compilation unit resolves names in this frame)
    Bare = bare  # noqa: F841
    return engine.jit.CompilationUnit(source)


@pytest.mark.parametrize("body, message", CHECK_CALLS)
def test_misused_calls_are_refused_as_torch_refuses_them(body, message):
    source = f"def f(x):\n    {body}\n    return x\n"
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=message):
            _compile(engine, source)


@pytest.mark.parametrize("bare, message", [
    (List, r"Attempted to use List without a contained type. Please add a contained type, e.g. List\[int\]"),
    (Tuple, r"Attempted to use Tuple without a contained type. Please add a contained type, e.g. Tuple\[int\]"),
    (Optional, r"Please add a contained type, e.g. Optional\[int\]"),
    (Dict, r"Attempted to use Dict without contained types. Please add contained type, e.g. Dict\[int, int\]"),
])
def test_jit_isinstance_refuses_a_container_without_element_types(bare, message):
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=message):
            engine.jit.isinstance([1], bare)
        with pytest.raises(RuntimeError, match=message):
            _compile(engine, "def f(x: List[int]):\n    return torch.jit.isinstance(x, Bare)\n", bare)


def test_hash_of_a_tensor_is_by_identity_and_a_list_is_unhashable():
    def same(a, b):
        return hash(a) == hash(b)

    def nested(t: Tuple[int, List[int]]):
        return hash(t)

    for engine in (torch, scriptc):
        x = engine.tensor(1)
        assert engine.jit.script(same)(x, x) and not engine.jit.script(same)(x, engine.tensor(1))
        with pytest.raises(RuntimeError, match="unhashable"):
            engine.jit.script(nested)((1, [1]))


class Mixed(enum.Enum):
    RED = 1
    GREEN = "green"


class Tensors(enum.Enum):
    FOO = scriptc.tensor(0)


def _mixed_name(x: Mixed) -> str:
    return x.name


def _tensor_name(x: Tensors) -> str:
    return x.name


@pytest.mark.parametrize("fn, message", [(_mixed_name, "Could not unify type list"),
                                         (_tensor_name, "Cannot create Enum with value type 'Tensor'")])
def test_an_enum_script_cannot_type_is_refused_in_torchs_words(fn, message):
    with pytest.raises(RuntimeError, match=message):
        scriptc.jit.script(fn)


def _expands(d: Dict[str, int]):
    return {**d}


def _exception_value():
    a = Exception()
    print(a)


@pytest.mark.parametrize("fn, kind, message", [
    (_expands, scriptc.jit.frontend.NotSupportedError, "Dict expansion"),
    (_exception_value, RuntimeError, "cannot be used as a value"),
])
def test_unsupported_python_is_refused_with_torchs_error(fn, kind, message):
    torch_kind = torch.jit.frontend.NotSupportedError if kind is not RuntimeError else RuntimeError
    with pytest.raises(torch_kind, match=message):
        torch.jit.script(fn)
    with pytest.raises(kind, match=message):
        scriptc.jit.script(fn)


def _unwrapping(fn):
    def wrapper(*args, **kwargs):  # not scriptable itself: *args
        return fn(*args, **kwargs)

    wrapper.__prepare_scriptable__ = lambda: fn
    return wrapper


@_unwrapping
def _inner(x: float) -> float:
    return x + 3


@_unwrapping
def _outer(x: float) -> float:
    return _inner(x) * 2


def test_a_decorator_names_what_to_script_through_prepare_scriptable():
    for engine in (torch, scriptc):
        assert engine.jit.script(_outer)(1.0) == _outer(1.0) == 8.0


def test_tensor_layout_reads_as_torch_script_reads_it():
    def layout_of(x):
        return x.layout

    assert scriptc.jit.script(layout_of)(scriptc.ones(2)) == torch.jit.script(layout_of)(torch.ones(2)) == 0


def _hooked(engine):
    class Named(engine.nn.Module):
        def forward(self, name: str) -> str:
            return name + "!"

    def pre_hook(self, input: Tuple[int]) -> Tuple[str]:
        return ("x",)

    module = Named()
    module.register_forward_pre_hook(pre_hook)
    return module


def test_a_hook_declaring_other_input_types_than_forward_is_refused_in_torchs_words():
    message = "has the wrong inner types for the input tuple argument"
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=message):
            engine.jit.script(_hooked(engine))


class _Adder:
    def __call__(self, first, second, *rest):
        return first + second + sum(rest)


def _add_two(first: int, second: int) -> int:
    return first + second


class _AdderWithEscapeHatch(_Adder):
    def __prepare_scriptable__(self):
        return _add_two


def test_any_object_names_what_to_script_in_its_place_and_varargs_are_refused():
    for engine in (torch, scriptc):
        with pytest.raises(engine.jit.frontend.NotSupportedError, match="can't take variable number of arguments"):
            engine.jit.script(_Adder())
        scripted = engine.jit.script(_AdderWithEscapeHatch())
        assert scripted(1, 2) == 3
        with pytest.raises(RuntimeError, match=r"expected at most 2 argument\(s\) but received 4 argument\(s\)"):
            scripted(1, 2, 3, 4)


@pytest.mark.parametrize("call", ["torch.finfo(x.dtype).min", "torch.iinfo(torch.int32).max"])
def test_a_library_class_that_is_no_builtin_is_refused_at_the_users_line(call):
    """HF-style `(1.0 - mask) * torch.finfo(dtype).min` does not script in torch; ours said so from
    inside scriptc's own dtype_info.py, which it had tried to compile as the user's class."""
    source = f"def f(x):\n    return x * {call}\n"
    name = call.split("(")[0].split(".")[-1]
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=f"Unknown builtin op: aten::{name}"):
            _compile(engine, source)
    with pytest.raises(scriptc.ScriptError) as caught:
        _compile(scriptc, source)
    assert f"2:16: Unknown builtin op: aten::{name}." in str(caught.value) and "dtype_info" not in str(caught.value)


def test_a_starred_call_argument_that_is_a_list_is_refused_as_torch_refuses_it():
    source = "def f(x, sizes: List[int]):\n    return x.new_zeros(*sizes)\n"
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match="cannot statically infer the expected size of a list in this context"):
            _compile(engine, source)
    with pytest.raises(RuntimeError, match=r"\*\*kwargs in calls are not supported"):
        _compile(scriptc, "def f(x, d: Dict[str, int]):\n    return x.new_zeros(**d)\n")


def _reads_any(value: Any):
    return value.t


def test_an_attribute_of_an_any_is_refused_in_torchs_words():
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match="'Any' object has no attribute or method 't'"):
            engine.jit.script(_reads_any)


class _Triple(NamedTuple):
    a: int
    b: float
    c: List[int]


def _wrong_field_types():
    return _Triple("foo", "bar", "baz")  # type: ignore[arg-type]


def _bare_dict(x: Dict) -> Any:
    return x


@pytest.mark.parametrize("fn, message", [
    (_wrong_field_types, "Expected a value of type 'int' for argument 'a' but instead found type 'str'"),
    (_bare_dict, r"Attempted to use Dict without contained types. Please add contained type, e.g. Dict\[int, int\]"),
])
def test_a_function_is_refused_as_torch_refuses_it(fn, message):
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=message):
            engine.jit.script(fn)


_add_one = lambda x: x + 1  # noqa: E731 - a lambda is what is scripted here


class _CallsALambda(torch.nn.Module):
    """minGPT's Block: its MLP kept as a lambda attribute, `self.mlpf = lambda x: ...`."""

    def __init__(self):
        super().__init__()
        self.twice = lambda x: x * 2

    def forward(self, x):
        return self.twice(x)


class _CallsALambdaScriptc(scriptc.nn.Module):
    def __init__(self):
        super().__init__()
        self.twice = lambda x: x * 2

    def forward(self, x):
        return self.twice(x)


def test_a_lambda_is_refused_as_torch_refuses_it_not_compiled_as_the_next_def_in_its_file():
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match="Expected a single top-level function: .*test_script_errors_torch.py:"):
            engine.jit.script(_add_one)
    for engine, module in ((torch, _CallsALambda), (scriptc, _CallsALambdaScriptc)):
        with pytest.raises(RuntimeError, match="Expected a single top-level function"):
            engine.jit.script(module())


class _FloatLayerNorm(scriptc.nn.LayerNorm):
    """OpenAI CLIP's LayerNorm: the parent's forward through super()."""

    def forward(self, x):
        return super().forward(x.float())


def test_a_builtin_class_such_as_super_is_refused_at_the_users_line():
    with pytest.raises(scriptc.ScriptError, match=r"Python builtin <class 'super'> is currently not supported in Torchscript"):
        scriptc.jit.script(_FloatLayerNorm(3))
