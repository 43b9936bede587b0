"""Bad calls of traced, frozen, optimized and loaded modules and bad files given to jit.load raise torch's
exception type with torch's words (checked against torch 2.13)."""

from __future__ import annotations

import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")


def _traced_linear(T):
    return T.jit.trace(T.nn.Linear(3, 4), T.ones(2, 3))


@pytest.mark.parametrize("call", [
    lambda T, m: m(T.ones(2, 3), T.ones(2, 3)),
    lambda T, m: m(),
], ids=["extra", "missing"])
def test_a_traced_module_called_with_the_wrong_count_raises_torchs_error(call):
    expected = raised(lambda: call(torch, _traced_linear(torch)))
    ours = raised(lambda: call(scriptc, _traced_linear(scriptc)))
    assert expected[0] is RuntimeError and ours is not None and issubclass(ours[0], scriptc.CallError)
    assert expected[1].startswith(ours[1])  # torch adds the schema ("Declaration: forward(...)")


def _saved_and_loaded(T, tmp_path):
    path = str(tmp_path / f"linear_{T.__name__}.pt")
    T.jit.script(T.nn.Linear(3, 4).eval()).save(path)
    return T.jit.load(path)


_MISFIT_COUNTS = [lambda T, m: m(T.ones(2, 3), T.ones(2, 3)), lambda T, m: m(), lambda T, m: m(y=T.ones(2, 3))]


@pytest.mark.parametrize("call", _MISFIT_COUNTS, ids=["extra", "missing", "unknown-keyword"])
def test_a_loaded_module_called_with_inputs_that_do_not_fit_raises_a_runtime_error(call, tmp_path):
    assert raised(lambda: call(torch, _saved_and_loaded(torch, tmp_path)))[0] is RuntimeError
    with pytest.raises(RuntimeError) as ours:  # (and a TypeError, as Python's own calls raise)
        call(scriptc, _saved_and_loaded(scriptc, tmp_path))
    assert isinstance(ours.value, (scriptc.CallError, TypeError))


_COMPILED = {
    "loaded": _saved_and_loaded,
    "frozen": lambda T, tmp_path: T.jit.freeze(T.jit.script(T.nn.Linear(3, 4).eval())),
    "optimized": lambda T, tmp_path: T.jit.optimize_for_inference(T.jit.script(T.nn.Linear(3, 4).eval())),
    "traced": lambda T, tmp_path: _traced_linear(T),
}


@pytest.mark.parametrize("build", _COMPILED.values(), ids=_COMPILED.keys())
@pytest.mark.parametrize("value", [[[1.0, 2.0, 3.0]], None, 3], ids=["list", "None", "int"])
def test_a_compiled_module_refuses_what_is_no_tensor_where_it_takes_one(build, value, tmp_path):
    expected = raised(lambda: build(torch, tmp_path)(value))
    ours = raised(lambda: build(scriptc, tmp_path)(value))
    assert expected[0] is RuntimeError and ours is not None and ours[0] is RuntimeError
    assert f"for argument 'input' but instead found type '{type(value).__name__}'" in ours[1]


def test_a_traced_module_called_right_still_runs():
    assert _traced_linear(scriptc)(scriptc.ones(5, 3)).shape == (5, 4)


def test_jit_load_of_a_missing_path_or_a_directory_is_torchs_value_error(tmp_path):
    for path in (str(tmp_path / "missing.pt"), str(tmp_path)):
        assert raised(lambda: scriptc.jit.load(path)) == raised(lambda: torch.jit.load(path))


def test_jit_load_of_a_file_that_is_no_archive_is_a_runtime_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not an archive")
    assert raised(lambda: torch.jit.load(str(path)))[0] is RuntimeError
    with pytest.raises(RuntimeError):
        scriptc.jit.load(str(path))
    with pytest.raises(scriptc.ArchiveError):
        scriptc.jit.load(str(path))
