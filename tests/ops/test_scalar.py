"""Tensors read as Python values in scripted code (scriptc/ops/scalar.py) fail in torch's words."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("body", "size", "message"), [
    ("if x:\n        return 1\n    return 0", 2, "Boolean value of Tensor with more than one value is ambiguous"),
    ("return bool(x)", 0, "Boolean value of Tensor with no values is ambiguous"),
    ("return x.item()", 3, "a Tensor with 3 elements cannot be converted to Scalar"),
    ("return int(x)", 3, "a Tensor with 3 elements cannot be converted to Scalar"),
    ("return float(x)", 2, "a Tensor with 2 elements cannot be converted to Scalar"),
])
def test_a_tensor_read_as_one_value_has_one_element_or_fails_as_torchs(body, size, message):
    source = f"def fn(x: Tensor):\n    {body}\n"
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError) as raised:
            engine.jit.CompilationUnit(source).fn(engine.ones(size))
        assert str(raised.value).strip().splitlines()[-1] == f"RuntimeError: {message}"
    assert scriptc.jit.CompilationUnit(source).fn(scriptc.ones(1)) == torch.jit.CompilationUnit(source).fn(
        torch.ones(1))
