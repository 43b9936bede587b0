"""Bad calls of traced modules and bad files given to jit.load raise torch's exception type with torch's
words (checked against torch 2.13)."""

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
    assert ours is not None and ours[0] is expected[0] is RuntimeError
    assert expected[1].startswith(ours[1])  # torch adds the schema ("Declaration: forward(...)")


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
