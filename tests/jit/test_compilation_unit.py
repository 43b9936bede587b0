"""torch.jit.CompilationUnit (functions compiled from source text) and torch.jit.Error (what scripted
code raises), against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")

SOURCE = """
    def scale(x, k: int):
        return shifted(x * k)

    def total(x, n: int):
        s = 0.0
        for i in range(n):
            s += float(scale(x, i).sum())
        return s
"""


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_functions_compiled_from_source_call_each_other_and_see_the_callers_names(engine):
    def shifted(x):  # resolved by name from the caller's scope, as torch does, and compiled too
        return x + 0.5

    unit = engine.jit.CompilationUnit(SOURCE)
    x = engine.ones(2, 3)
    assert unit.total(x, 4) == pytest.approx(6 * (0 + 1 + 2 + 3) + 4 * 6 * 0.5)
    assert unit.find_function("scale") is not None and unit.find_function("missing") is None


def test_define_adds_functions_and_compiles_them_at_once():
    unit = scriptc.jit.CompilationUnit()
    unit.define("def twice(a: int) -> int:\n    return 2 * a\n")
    assert unit.twice(21) == 42
    with pytest.raises(RuntimeError, match="undefined value nowhere"):
        unit.define("def broken(a: int) -> int:\n    return nowhere(a)\n")
    with pytest.raises(AttributeError):
        unit.broken  # noqa: B018


def test_source_that_is_not_only_functions_is_refused():
    with pytest.raises(scriptc.errors.ScriptError, match="expected def"):
        scriptc.jit.CompilationUnit("x = 1\n")


RAISING = """
def fails(cond: bool, n: int):
    if cond:
        raise ValueError(n)
    assert n > 0, "n must be positive"
    return n
"""


@pytest.mark.parametrize("args, message", [((True, 3), "builtins.ValueError: 3"),
                                           ((False, -1), "AssertionError: n must be positive")])
def test_scripted_raise_is_a_jit_error_named_as_torch_names_it(args, message):
    expected = torch.jit.CompilationUnit(RAISING)
    with pytest.raises(torch.jit.Error, match=message):
        expected.fails(*args)
    unit = scriptc.jit.CompilationUnit(RAISING)
    with pytest.raises(scriptc.jit.Error, match=message) as got:
        unit.fails(*args)
    # torch's message: the traceback of the scripted calls, then the exception as TorchScript names it
    assert str(got.value).startswith("The following operation failed in the TorchScript interpreter.\n")
    assert str(got.value).splitlines()[-1] == message


def test_compile_errors_are_runtime_errors_as_in_torch():
    def bad(x):
        return undefined_name(x)  # noqa: F821

    with pytest.raises(RuntimeError, match="undefined_name"):
        torch.jit.script(bad)
    with pytest.raises(RuntimeError, match="undefined_name"):
        scriptc.jit.script(bad)


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_the_string_frontend_refuses_several_iterables_and_takes_a_parenthesized_tuple(engine):
    several = "def f(x: int) -> int:\n    s = x\n    for a in 1, 2:\n        s += a\n    return s\n"
    with pytest.raises(RuntimeError, match="List of iterables is not supported currently"):
        engine.jit.CompilationUnit(several)
    unit = engine.jit.CompilationUnit(several.replace("in 1, 2:", "in (1, 2):"))
    assert unit.f(1) == 4
