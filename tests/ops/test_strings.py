"""str.format in scripted code as TorchScript's aten::format does it (scriptc/ops/strings.py): each
`{}` takes the next value, other braces are text, values left over are ignored, too few is an
error; checked against torch 2.13."""

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _braces(x: float) -> str:
    return "{:.2f}|{0}|{{}}|{}|{x}".format(x, 2)  # noqa: F524, F525 - TorchScript reads only {}


def _extra(x: float) -> str:
    return "{}".format(x, 1, 2)  # noqa: F523 - values left over are ignored


def _fields(x: float) -> str:
    return f"{x} and {{x}}"


def _too_few(x: float) -> str:
    return "{} {}".format(x)  # noqa: F524 - the refusal under test


@pytest.mark.parametrize("fn", [_braces, _extra, _fields])
def test_format_writes_what_torch_script_writes(fn):
    assert scriptc.jit.script(fn)(1.2345) == torch.jit.script(fn)(1.2345)


def test_too_few_values_is_an_error():
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match="Too few arguments for format string"):
            engine.jit.script(_too_few)(1.0)


def _spec(x: float) -> str:
    return f"{x:.2f}|{x:>6}"


def test_an_fstring_spec_torch_refuses_formats_as_python():
    assert scriptc.jit.script(_spec)(1.5) == "1.50|   1.5"
