"""What a program printing scriptc's objects sees: the text torch prints for the same objects (dtypes,
memory formats, layouts, Size, legacy type names, return types, storages, grad modes, generators)."""

from __future__ import annotations

import re

import pytest

import scriptc

PRINTED = [
    lambda T: T.ones(2).dtype,
    lambda T: [T.int64, T.bool, T.complex64, T.bfloat16, T.uint8, T.float16, T.cdouble],
    lambda T: T.float32.to_complex(),
    lambda T: T.get_default_dtype(),
    lambda T: [T.contiguous_format, T.channels_last, T.preserve_format, T.channels_last_3d],
    lambda T: [T.ones(1).layout, T.sparse_coo],
    lambda T: T.ones(2, 3).shape,
    lambda T: T.Size([1, 2])[1:],
    lambda T: [T.ones(1).type(), T.ones(1, dtype=T.int16).type(), T.typename(T.zeros(1, dtype=T.int64))],
    lambda T: T.FloatTensor,
    lambda T: T.tensor([[1.0, 3.0], [2.0, 0.0]]).max(1),
    lambda T: T.linalg.eigh(T.eye(2)),
    lambda T: T.zeros(2, dtype=T.int32),
    lambda T: T.tensor([1, 2]).to_sparse(),
    lambda T: T.tensor([1.0, 2.0], dtype=T.float64).to_sparse(),
    lambda T: T.tensor([1.0, 2.0]).storage(),
    lambda T: T.tensor([1, 2], dtype=T.int16).untyped_storage(),
    lambda T: T.set_grad_enabled(T.is_grad_enabled()),  # constructing it sets the mode: keep the current one
    lambda T: [T.no_grad(), T.enable_grad(), T.inference_mode(), T.Generator()],
    lambda T: (T.ones(2, requires_grad=True) * 2).grad_fn,
]


def _printed(value) -> tuple[str, str]:
    """repr and str, with object addresses (which differ run to run) blanked."""
    return tuple(re.sub(r"0x[0-9a-f]+", "0x?", text) for text in (repr(value), str(value)))


@pytest.mark.parametrize("build", PRINTED, ids=[str(i) for i in range(len(PRINTED))])
def test_printed_text_is_torchs(build):
    torch = pytest.importorskip("torch")
    assert _printed(build(scriptc)) == _printed(build(torch))


def test_printed_text_without_torch():
    assert repr(scriptc.float32) == str(scriptc.float32) == "torch.float32"
    assert repr(scriptc.zeros(2, 3).shape) == "torch.Size([2, 3])"
    assert scriptc.ones(1).type() == "torch.FloatTensor"
    assert repr(scriptc.channels_last) == "torch.channels_last"
    assert repr(scriptc.sparse_coo) == "torch.sparse_coo"


@pytest.mark.parametrize("shape", [(2, "B", None), (), None])
def test_tensor_type_dims_are_ints_symbols_or_unknown(shape):
    from scriptc.types import TensorType
    assert TensorType(scriptc.float32, shape).shape == shape


@pytest.mark.parametrize("shape", [(2, 3.0), (True,), (scriptc.ops.rules.UNKNOWN,), [2, 3]])
def test_tensor_type_refuses_other_dims(shape):
    # a shape rule that lets an Unknown (or a float) into a type fails where it does so, not in a later pass
    from scriptc.types import TensorType
    with pytest.raises(TypeError, match="a shape is a tuple of ints, symbols"):
        TensorType(scriptc.float32, shape)
