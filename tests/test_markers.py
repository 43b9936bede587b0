"""The markers and switches model code carries: torch._assert, backends, accelerator, the legacy
typed constructors, memory formats, Tensor.is_xpu/is_mps; torch.functional's shape and dtype helpers."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch


def test_assert_raises_with_the_message():
    torch._assert(torch.tensor(True), "unused")
    torch._assert(1 + 1 == 2, "unused")
    with pytest.raises(AssertionError, match="shape mismatch"):
        torch._assert(torch.tensor(False), "shape mismatch")


def test_backends_and_accelerator_report_nothing_and_keep_flags():
    assert not torch.backends.cudnn.is_available() and torch.backends.cudnn.version() is None
    assert not torch.backends.mps.is_available() and not torch.backends.mps.is_built()
    assert not torch.accelerator.is_available() and torch.accelerator.current_accelerator() is None
    assert not torch.xpu.is_available() and torch.xpu.device_count() == 0 and not torch.xpu.is_initialized()
    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True
        assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
        with torch.backends.cudnn.flags(enabled=False):
            assert not torch.backends.cudnn.enabled
        assert torch.backends.cudnn.enabled and torch.backends.cudnn.benchmark
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = before, False
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.ones(2)
    assert not x.is_xpu and not x.is_mps and not x.is_meta and not x.is_cuda


def test_legacy_constructors():
    features = torch.FloatTensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert features.dtype == torch.float32 and features.tolist() == [[0, 1, 2], [3, 4, 5]]
    labels = torch.LongTensor([3, 1])
    assert labels.dtype == torch.int64 and labels.tolist() == [3, 1]
    assert torch.DoubleTensor(2, 3).shape == (2, 3) and torch.IntTensor(torch.Size([4])).shape == (4,)
    assert torch.FloatTensor().shape == (0,) and torch.ByteTensor([1]).dtype == torch.uint8
    assert isinstance(features, torch.FloatTensor) and not isinstance(features, torch.LongTensor)
    assert features.type(torch.LongTensor).dtype == torch.int64
    assert features.type("torch.DoubleTensor").dtype == torch.float64
    with pytest.raises(TypeError, match="expected"):
        torch.FloatTensor(torch.ones(2, dtype=torch.int64))


def test_memory_formats_lay_copies_out():
    x = torch.randn(2, 3, 4, 5)
    nhwc = x.clone(memory_format=torch.channels_last)
    assert torch.equal(nhwc, x) and nhwc.is_contiguous(memory_format=torch.channels_last)
    assert not nhwc.is_contiguous() and nhwc.stride() == (60, 1, 15, 3)
    assert torch.empty_like(nhwc).stride() == nhwc.stride()  # preserve_format keeps the layout
    assert torch.zeros_like(nhwc, memory_format=torch.contiguous_format).is_contiguous()
    assert repr(torch.channels_last) == "torch.channels_last" and isinstance(torch.preserve_format, torch.memory_format)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.ones(3).clone(memory_format=torch.channels_last)


def test_shape_and_dtype_helpers_match_torch():
    real = pytest.importorskip("torch")
    for T in (torch, real):
        assert tuple(T.broadcast_shapes((2, 1), (3,), ())) == (2, 3)
        assert tuple(T.broadcast_shapes(2, (3, 1))) == (3, 2)
        with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4 at -1! Mismatching "
                                               r"argument at index 1 had \(4,\)"):
            T.broadcast_shapes((2, 3), (4,))
        assert T.promote_types(T.int32, T.float16) == T.float16
        assert T.result_type(T.ones(2, dtype=T.int32), 2.5) == T.float32 and T.result_type(2, 3) == T.int64
        assert T.result_type(T.ones(2, dtype=T.float16), T.tensor(1.0, dtype=T.float64)) == T.float16
        assert not T.can_cast(T.float32, T.int32) and T.can_cast(T.int32, T.float32)
        assert not T.can_cast(T.int64, T.bool) and T.can_cast(T.bool, T.uint8)
