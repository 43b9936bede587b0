"""torch.onnx's helpers under jit.trace, against torch 2.13: sizes read as tensors (shape_as_tensor, and
torch's tracer giving x.shape[i] as a 0-d tensor), a tensor where an int is declared, and F.interpolate by
a tensor scale_factor, each traced at one size and run at another (torchvision's detection transform)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

real = pytest.importorskip("torch")


def _resize_like_detection(torch, image):
    # torchvision's _resize_image_and_masks and _onnx_batch_images as they run under jit.trace
    shape = torch.onnx.operators.shape_as_tensor(image)[-2:]
    scale = torch.min(64.0 / torch.min(shape).to(torch.float32), 96.0 / torch.max(shape).to(torch.float32))
    resized = torch.nn.functional.interpolate(image[None], scale_factor=scale, mode="bilinear",
                                              recompute_scale_factor=True, align_corners=False)[0]
    sizes = torch.stack([resized.shape[1], resized.shape[2]]).to(torch.float32)
    return resized.sum(0), sizes


def _top_rows(torch, scores):
    # torchvision's _topk_min: k as the smaller of a number and a size, both tensors
    size = torch._shape_as_tensor(scores)[1].unsqueeze(0)
    k = torch.min(torch.cat((torch.tensor([5], dtype=size.dtype), size), 0))
    return scores.topk(k, dim=1)[0]


def _traced(engine, fn, example):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return engine.jit.trace(lambda x: fn(engine, x), example, check_trace=False)


def _same(ours, theirs):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_shape_as_tensor_and_onnx_export_state():
    x = np.zeros((2, 3, 4), dtype=np.float32)
    ours = scriptc.onnx.operators.shape_as_tensor(scriptc.from_numpy(x))
    import torch.onnx.operators
    theirs = torch.onnx.operators.shape_as_tensor(real.from_numpy(x))
    assert ours.dtype == scriptc.int64 and ours.tolist() == theirs.tolist()
    assert scriptc._shape_as_tensor(scriptc.from_numpy(x)).tolist() == [2, 3, 4]
    assert scriptc.onnx.is_in_onnx_export() is real.onnx.is_in_onnx_export() is False


def test_reshape_from_tensor_shape():
    x = np.arange(12, dtype=np.float32)
    import torch.onnx.operators
    ours = scriptc.onnx.operators.reshape_from_tensor_shape(scriptc.from_numpy(x), scriptc.tensor([3, 4]))
    theirs = torch.onnx.operators.reshape_from_tensor_shape(real.from_numpy(x), real.tensor([3, 4]))
    _same(ours, theirs)


@pytest.mark.parametrize("fn, traced_shape, run_shape", [(_resize_like_detection, (3, 20, 24), (3, 30, 18)),
                                                         (_top_rows, (2, 8), (3, 4))])
def test_a_trace_keeps_sizes_read_as_tensors(fn, traced_shape, run_shape):
    import torch.onnx.operators  # noqa: F401  (torch.onnx.operators is a submodule torch does not import)
    rng = np.random.default_rng(0)
    example, other = (rng.standard_normal(s).astype(np.float32) for s in (traced_shape, run_shape))
    ours = _traced(scriptc, fn, scriptc.from_numpy(example))
    theirs = _traced(real, fn, real.from_numpy(example))
    for x in (example, other):
        _same(ours(scriptc.from_numpy(x)), theirs(real.from_numpy(x)))


def test_a_traced_size_is_no_tensor_outside_a_list_of_tensors():
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but got int"):
        scriptc.stack([3, 4])
