"""math.<name> in scripted code gives C's value (TorchScript's, through libm) where Python's math
raises: poles and domain edges are infinities, other domain errors nan, overflows a signed inf."""

from __future__ import annotations

import math

import pytest

import scriptc

INF, NAN = math.inf, math.nan


def _scripted(body: str, signature: str = "a: float"):
    unit = scriptc.jit.CompilationUnit(f"def fn({signature}):\n    return {body}\n")
    return unit.fn


def _same(expected, got) -> bool:
    if isinstance(expected, tuple):
        return len(expected) == len(got) and all(_same(x, y) for x, y in zip(expected, got))
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(expected) and got == expected and math.copysign(1, got) == math.copysign(1, expected)


EDGES = [
    ("math.log(a)", 0.0, -INF), ("math.log(a)", -1.0, NAN), ("math.log10(a)", 0.0, -INF),
    ("math.log2(a)", -0.0, -INF), ("math.log1p(a)", -1.0, -INF), ("math.atanh(a)", 1.0, INF),
    ("math.atanh(a)", -1.0, -INF), ("math.sqrt(a)", -4.0, NAN), ("math.acos(a)", 2.0, NAN),
    ("math.sinh(a)", -1000.0, -INF), ("math.cosh(a)", -1000.0, INF), ("math.exp(a)", 1000.0, INF),
    ("math.gamma(a)", 0.0, INF), ("math.gamma(a)", -0.0, -INF), ("math.gamma(a)", -3.0, NAN),
    ("math.gamma(a)", 200.0, INF), ("math.lgamma(a)", -2.0, INF), ("math.lgamma(a)", 0.0, INF),
    ("math.sin(a)", INF, NAN), ("math.fmod(a, 0.0)", 1.0, NAN), ("math.remainder(a, 0.0)", 1.0, NAN),
    ("math.pow(a, 1001.0)", -10.0, -INF), ("math.pow(a, 0.5)", -8.0, NAN), ("a ** 1001.0", -10.0, -INF),
    ("math.ldexp(a, 5000)", -1.0, -INF), ("math.log(a, 2.0)", 0.0, -INF), ("math.log(2.0, a)", 1.0, INF),
]


@pytest.mark.parametrize(("body", "arg", "expected"), EDGES, ids=[f"{b}@{a}" for b, a, _ in EDGES])
def test_math_gives_c_value_where_python_raises(body, arg, expected):
    assert _same(expected, _scripted(body)(arg))


def test_math_values_python_computes_stay_python_values():
    assert _scripted("math.log(a)")(math.e) == 1.0
    assert _scripted("math.gamma(a)")(5.0) == 24.0
    assert _scripted("math.lgamma(a)")(-2.5) == math.lgamma(-2.5)


@pytest.mark.parametrize("arg", [2.5, -3.75, -0.0, INF, -INF, NAN])
def test_modf_and_frexp_split_a_float(arg):
    fn = _scripted("math.modf(a), math.frexp(a)")
    modf, frexp = fn(arg)
    assert _same(math.modf(arg), modf)
    assert _same(math.frexp(arg), frexp)


def test_pow_of_zero_to_a_negative_power_raises_as_in_torchscript():
    with pytest.raises(RuntimeError, match="0.0 cannot be raised to a negative power"):
        _scripted("math.pow(a, -1.0)")(0.0)


def test_math_matches_torchscript_on_a_grid():
    torch = pytest.importorskip("torch")
    values = [INF, -INF, NAN, 0.0, -0.0, 1.0, -1.0, 2.2, -2.2, 1e4, -1e4, 1000.0, -1000.0]
    names = ["log", "log1p", "log10", "exp", "sqrt", "gamma", "lgamma", "expm1", "acos", "atanh", "acosh", "sinh",
             "cosh", "tan"]
    for name in names:
        source = f"def fn(a: float) -> float:\n    return math.{name}(a)\n"
        reference = torch.jit.CompilationUnit(source).fn
        ours = scriptc.jit.CompilationUnit(source).fn
        for value in values:
            expected, got = reference(value), ours(value)
            # finite values may differ in the last bits (libm's tgamma vs Python's gamma)
            close = math.isfinite(expected) and math.isclose(expected, got, rel_tol=1e-12)
            assert close or _same(expected, got), (name, value)
