"""torch.ops.aten: the op table by ATen name, eagerly and in scripted code, against torch 2.13."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _index_put(engine, overload: bool):
    source, index, values = engine.zeros(6), engine.tensor([0, 2, 2, 5]), engine.tensor([1.0, 2.0, 3.0, 4.0])
    op = engine.ops.aten.index_put.hacked_twin if overload else engine.ops.aten._unsafe_index_put
    return op(source, [index], values, accumulate=True)


@pytest.mark.parametrize("overload", [True, False])
def test_ops_called_by_aten_name_match_torch(overload):
    np.testing.assert_allclose(_index_put(scriptc, overload).numpy(), _index_put(torch, overload).numpy())
    x = scriptc.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert scriptc.ops.aten.relu.default(x).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert scriptc.ops.aten.add.Tensor(x, x).tolist() == (x + x).tolist()


def _scripted_index_put(source, index, values):
    return scriptc.ops.aten._unsafe_index_put(source, [index], values, accumulate=False)


def test_aten_ops_in_scripted_code_include_method_only_ones():
    scripted = scriptc.jit.script(_scripted_index_put)
    source, index, values = scriptc.zeros(4), scriptc.tensor([3, 1]), scriptc.tensor([5.0, 6.0])
    assert scripted(source, index, values).tolist() == [0.0, 6.0, 0.0, 5.0]


def test_an_unknown_aten_name_is_torchs_attribute_error():
    for engine in (scriptc, torch):
        with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute 'no_such_op'"):
            _ = engine.ops.aten.no_such_op


def _kept_and_pooled(boxes, scores, features):
    keep = scriptc.ops.torchvision.nms(boxes, scores, 0.5)
    rois = scriptc.cat([scriptc.zeros(keep.shape[0], 1), boxes[keep]], dim=1)
    return keep, scriptc.ops.torchvision.roi_align(features, rois, 0.5, 2, 2, -1, False)


def test_torchvision_ops_eagerly_and_in_scripted_code():
    boxes = scriptc.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [12.0, 2.0, 20.0, 9.0]])
    scores = scriptc.tensor([0.6, 0.9, 0.3])
    features = scriptc.randn(1, 2, 8, 12)
    keep, pooled = _kept_and_pooled(boxes, scores, features)
    assert keep.tolist() == [1, 2] and keep.dtype == scriptc.int64 and pooled.shape == (2, 2, 2, 2)
    scripted_keep, scripted_pooled = scriptc.jit.script(_kept_and_pooled)(boxes, scores, features)
    assert scriptc.equal(scripted_keep, keep) and scriptc.allclose(scripted_pooled, pooled)
    assert repr(scriptc.ops.torchvision.nms) == "<OpOverloadPacket(op='torchvision::nms')>"


def test_the_torchvision_namespace_holds_only_torchvisions_ops():
    assert not hasattr(scriptc.ops.torchvision, "add") and not hasattr(scriptc.ops.aten, "nms")
    with pytest.raises(AttributeError, match="'_OpNamespace' 'torchvision' object has no attribute 'add'"):
        scriptc.ops.torchvision.__getattr__("add")


@pytest.mark.parametrize("boxes, scores, message", [
    (scriptc.zeros(3, 5), scriptc.zeros(3), "boxes should have 4 elements in dimension 1, got 5"),
    (scriptc.zeros(3, 4), scriptc.zeros(2), "boxes and scores should have same number of elements in dimension 0"),
    (scriptc.zeros(4), scriptc.zeros(1), "boxes should be a 2d tensor, got 1D"),
])
def test_nms_refuses_boxes_as_torchvision_does(boxes, scores, message):
    with pytest.raises(RuntimeError, match=message):
        scriptc.ops.torchvision.nms(boxes, scores, 0.5)


def test_roi_align_refuses_regions_without_a_batch_index():
    with pytest.raises(RuntimeError, match=r"rois must have shape as Tensor\[K, 5\]"):
        scriptc.ops.torchvision.roi_align(scriptc.zeros(1, 2, 4, 4), scriptc.zeros(3, 4), 1.0, 2, 2, -1, False)


def _pooled_to(features, rois, bins: int):
    return scriptc.ops.torchvision.roi_align(features, rois, 1.0, bins, bins + 1, 2, True)


def test_a_scripted_roi_align_with_sizes_known_at_run_time_saves_and_loads(tmp_path):
    features, rois = scriptc.randn(1, 2, 6, 6), scriptc.tensor([[0.0, 0.5, 1.0, 4.0, 5.5]])
    scripted = scriptc.jit.script(_pooled_to)
    path = str(tmp_path / "pooled.sc")
    scriptc.jit.save(scripted, path)
    loaded = scriptc.jit.load(path)
    assert scriptc.allclose(loaded(features, rois, 3), _pooled_to(features, rois, 3))
    assert loaded(features, rois, 2).shape == (1, 2, 2, 3)
