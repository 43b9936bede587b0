"""torch.finfo / torch.iinfo against torch 2.13: every attribute, repr and errors."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "complex64", "complex128"])
def test_finfo_matches_torch(name):
    ours, theirs = scriptc.finfo(getattr(scriptc, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


def test_finfo_defaults_to_float32():
    assert scriptc.finfo().dtype == "float32" and scriptc.finfo().bits == 32


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo_matches_torch(name):
    if not hasattr(scriptc, name):
        pytest.skip(f"scriptc has no {name}")
    ours, theirs = scriptc.iinfo(getattr(scriptc, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.max, ours.min, ours.dtype) == (theirs.bits, theirs.max, theirs.min, theirs.dtype)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("code", ["T.finfo(T.int32)", "T.iinfo(T.float32)", "T.iinfo(T.bool)"])
def test_wrong_kind_raises_torch_error(code):
    with pytest.raises(TypeError) as theirs:
        eval(code, {"T": torch})
    with pytest.raises(TypeError) as ours:
        eval(code, {"T": scriptc})
    assert str(ours.value) == str(theirs.value)
