"""Quantized tensors in checkpoints: torch._utils._rebuild_qtensor over QInt8/QUInt8/QInt32 storages, written
here and read by torch 2.13, and the other way round."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", category=UserWarning)


def _checkpoint(lib):
    values = np.random.default_rng(0).uniform(-1, 1, (3, 4)).astype(np.float32)
    return {"per_tensor": lib.quantize_per_tensor(lib.tensor(values), 0.02, 3, lib.quint8),
            "qint32": lib.quantize_per_tensor(lib.tensor(values), 0.001, -2, lib.qint32),
            "per_channel": lib.quantize_per_channel(lib.tensor(values), lib.tensor([0.01, 0.02, 0.04]),
                                                    lib.tensor([0, 1, -1]), 0, lib.qint8),
            "in_a_tuple": (lib.quantize_per_tensor(lib.tensor(values), 0.1, 0, lib.qint8), None)}


def _same(a, b):
    assert repr(a) == repr(b)
    np.testing.assert_array_equal(a.int_repr().numpy(), b.int_repr().numpy())


def test_saved_here_loads_in_torch_and_back():
    buffer = io.BytesIO()
    saved = _checkpoint(scriptc)
    scriptc.save(saved, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    reference = _checkpoint(torch)
    for key in ("per_tensor", "qint32", "per_channel"):
        _same(loaded[key], reference[key])
    _same(loaded["in_a_tuple"][0], reference["in_a_tuple"][0])
    buffer.seek(0)
    again = scriptc.load(buffer)
    for key in ("per_tensor", "qint32", "per_channel"):
        _same(again[key], saved[key])


def test_saved_by_torch_loads_here():
    buffer = io.BytesIO()
    torch.save(_checkpoint(torch), buffer)
    buffer.seek(0)
    loaded, expected = scriptc.load(buffer), _checkpoint(scriptc)
    for key in ("per_tensor", "qint32", "per_channel"):
        _same(loaded[key], expected[key])
        assert loaded[key].is_quantized


def test_bad_quantizer_parameters_are_refused():
    from scriptc.serialization.torch_names import Storage, _rebuild_qtensor

    storage = Storage(np.zeros(4, scriptc.qint8.np), "cpu")
    with pytest.raises(RuntimeError, match="invalid quantizer parameters"):
        _rebuild_qtensor(storage, 0, (4,), (1,), ("per_tensor_affine", 0.1, 0), False, None)
    with pytest.raises(RuntimeError, match="expected a quantized storage"):
        _rebuild_qtensor(Storage(np.zeros(4, np.int8), "cpu"), 0, (4,), (1,), (scriptc.per_tensor_affine, 0.1, 0),
                         False, None)
