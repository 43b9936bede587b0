"""Embedding's argument checks word their errors as torch's."""

from __future__ import annotations

import pytest

import scriptc


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "float16"])
def test_non_integer_indices_error_names_the_tensor_type_as_torch(dtype):
    torch = pytest.importorskip("torch")
    messages = []
    for lib in (scriptc, torch):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.embedding(lib.ones(2, dtype=getattr(lib, dtype)), lib.ones(3, 2))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
