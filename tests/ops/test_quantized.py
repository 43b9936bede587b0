"""Quantized tensors (scriptc/ops/quantized.py): the tensor API, printing and errors against torch 2.13,
and the activation parameters dynamic quantization picks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc
from scriptc.ops.quantized import choose_activation_qparams

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantiz", category=UserWarning)

rng = np.random.default_rng(7)


def _pair(values, *args, dtype="quint8"):
    s = scriptc.quantize_per_tensor(scriptc.tensor(values), *args, getattr(scriptc, dtype))
    t = torch.quantize_per_tensor(torch.tensor(values), *args, getattr(torch, dtype))
    return s, t


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32"])
def test_per_tensor_integers_parameters_and_values_match_torch(dtype):
    values = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
    s, t = _pair(values, 0.037, 5, dtype=dtype)
    assert s.dtype is getattr(scriptc, dtype) and s.is_quantized and not scriptc.tensor(values).is_quantized
    np.testing.assert_array_equal(s.int_repr().numpy(), t.int_repr().numpy())
    assert s.int_repr().dtype.name == str(t.int_repr().dtype).replace("torch.", "")
    assert (s.q_scale(), s.q_zero_point(), repr(s.qscheme())) == (t.q_scale(), t.q_zero_point(), repr(t.qscheme()))
    np.testing.assert_array_equal(s.dequantize().numpy(), t.dequantize().numpy())
    assert repr(s) == repr(t)


def test_values_past_the_range_saturate_as_in_torch():
    # qint32's bounds are not float32 values: 2**31 - 1 must not round up and wrap to -2**31
    for dtype, values in (("qint32", [1e9, -1e9, 2.1e8, 1.5]), ("qint8", [1e3, -1e3, 12.7, -12.8])):
        s, t = _pair(np.array(values, np.float32), 0.1, 0, dtype=dtype)
        np.testing.assert_array_equal(s.int_repr().numpy(), t.int_repr().numpy())


def test_item_gives_the_value_a_quantized_element_stands_for_and_tolist_refuses():
    s, t = _pair(np.array([0.73, -0.31], np.float32), 0.1, 3, dtype="qint8")
    assert [s[i].item() for i in range(2)] == [t[i].item() for i in range(2)]
    for q in (s, t):
        with pytest.raises(RuntimeError, match="load_scalar: invalid type"):
            q.tolist()


def test_per_channel_matches_torch():
    values = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    scales, zero_points = np.array([0.01, 0.02, 0.05]), np.array([0, -3, 7])
    s = scriptc.quantize_per_channel(scriptc.tensor(values), scriptc.tensor(scales), scriptc.tensor(zero_points), 0,
                                     scriptc.qint8)
    t = torch.quantize_per_channel(torch.tensor(values), torch.tensor(scales), torch.tensor(zero_points), 0,
                                   torch.qint8)
    np.testing.assert_array_equal(s.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(s.q_per_channel_scales().numpy(), t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(s.q_per_channel_zero_points().numpy(), t.q_per_channel_zero_points().numpy())
    assert s.q_per_channel_axis() == 0 and repr(s.qscheme()) == "torch.per_channel_affine"
    np.testing.assert_array_equal(s.dequantize().numpy(), t.dequantize().numpy())
    assert repr(s) == repr(t)


def test_views_copies_and_concatenation_keep_the_quantization():
    s, t = _pair(rng.uniform(-1, 1, (2, 3)).astype(np.float32), 0.02, 3)
    for fs, ft in ((lambda q: q[1:], lambda q: q[1:]), (lambda q: q.t().contiguous(), lambda q: q.t().contiguous()),
                   (lambda q: q.reshape(3, 2), lambda q: q.reshape(3, 2)), (lambda q: q.clone(), lambda q: q.clone()),
                   (lambda q: q.detach(), lambda q: q.detach()),
                   (lambda q: q[:1].expand(3, 3), lambda q: q[:1].expand(3, 3)),
                   (scriptc.tensor, torch.tensor)):
        a, b = fs(s), ft(t)
        assert a.is_quantized and repr(a) == repr(b)
    cat = scriptc.cat([s, s])
    assert cat.is_quantized and cat.shape == (4, 3) and cat.q_scale() == 0.02


def test_cat_and_stack_quantize_again_to_the_first_tensors_parameters_as_torch():
    values = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    pairs = [_pair(values, 0.1, 3, dtype="qint8"), _pair(values, 0.2, 0, dtype="qint8")]
    for name in ("cat", "stack"):
        s = getattr(scriptc, name)([p[0] for p in pairs])
        t = getattr(torch, name)([p[1] for p in pairs])
        assert repr(s) == repr(t)
        np.testing.assert_array_equal(s.int_repr().numpy(), t.int_repr().numpy())
    (s, t), (other_dtype, _) = pairs[0], _pair(values, 0.1, 0, dtype="quint8")
    with pytest.raises(RuntimeError, match="All dtypes must be the same."):
        scriptc.cat([s, other_dtype])
    with pytest.raises(NotImplementedError, match="from the 'CPU' backend"):
        scriptc.stack([s, scriptc.tensor(values)])
    with pytest.raises(NotImplementedError, match="'aten::hstack' with arguments from the 'QuantizedCPU' backend"):
        scriptc.hstack([s, s])


def test_ops_without_a_quantized_kernel_raise_torchs_error():
    s, t = _pair(rng.uniform(-1, 1, 3).astype(np.float32), 0.1, 0)
    for fn in (lambda q: q + q, lambda q: q * 2, lambda q: q.sum(), lambda q: q.exp(), lambda q: q.float()):
        with pytest.raises(NotImplementedError, match="with arguments from the 'QuantizedCPU' backend"):
            fn(s)
        with pytest.raises((NotImplementedError, RuntimeError)):
            fn(t)


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x, q: m.quantize_per_tensor(x.long(), 0.1, 0, m.qint8), RuntimeError,
     "Quantize only works on Float Tensor, got Long"),
    (lambda m, x, q: m.quantize_per_tensor(x.double(), 0.1, 0, m.qint8), RuntimeError,
     "Quantize only works on Float Tensor, got Double"),
    (lambda m, x, q: m.quantize_per_tensor(x, 0.1, 0, m.float32), RuntimeError,
     "ScalarType Float is not supported in new_qtensor."),
    (lambda m, x, q: m.quantize_per_tensor(x, 0.1, 300, m.qint8), RuntimeError,
     "quantize_tensor_per_tensor_affine zero_point 300 is above upper bound."),
    (lambda m, x, q: m.quantize_per_channel(x, m.tensor([0.1]), m.tensor([0]), 2, m.qint8), RuntimeError,
     "Channel axis out of range"),
    (lambda m, x, q: m.quantize_per_channel(x, m.tensor([0.1, 0.2]), m.tensor([0, 0]), 0, m.qint8), RuntimeError,
     "length of scales must equal to channel, expected 3 got, 2"),
    (lambda m, x, q: x.int_repr(), NotImplementedError, "Could not run 'aten::int_repr' with arguments from the "
     "'CPU' backend"),
    (lambda m, x, q: x.q_scale(), NotImplementedError, "Could not run 'aten::q_scale'"),
    (lambda m, x, q: q.q_per_channel_scales(), RuntimeError, "kPerChannelAffine"),
    (lambda m, x, q: q.numpy(), TypeError, "Got unsupported ScalarType QInt8"),
    (lambda m, x, q: q.requires_grad_(), RuntimeError, "only Tensors of floating point dtype can require gradients"),
])
def test_errors_match_torch(call, error, message):
    values = rng.uniform(-1, 1, 3).astype(np.float32)
    for lib in (scriptc, torch):
        x = lib.tensor(values)
        q = lib.quantize_per_tensor(x, 0.1, 0, lib.qint8)
        with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
            call(lib, x, q)


def test_dequantize_of_a_float_tensor_is_the_tensor():
    x = scriptc.randn(3)
    np.testing.assert_array_equal(x.dequantize().numpy(), x.numpy())


@pytest.mark.parametrize("low, high, reduce_range", [(-1.3, 2.7, True), (-1.3, 2.7, False), (0.0, 0.0, True),
                                                      (1e-7, 2e-6, True), (-5.0, -1.0, False), (0.5, 3.0, True)])
def test_activation_parameters_are_fbgemms(low, high, reduce_range):
    """The scale and zero point picked for an activation are the ones torch's quantize_per_tensor_dynamic picks."""
    x = np.linspace(low, high, 11, dtype=np.float32)
    scale, zero_point = choose_activation_qparams(x, reduce_range)
    q = torch.quantize_per_tensor_dynamic(torch.tensor(x), torch.quint8, reduce_range)
    # (torch keeps that scale in double; fbgemm computes with it as float32)
    assert (scale, zero_point) == (np.float32(q.q_scale()), q.q_zero_point())


def test_pickling_and_deep_copies_keep_the_quantization():
    import copy
    import pickle

    values = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    per_tensor = scriptc.quantize_per_tensor(scriptc.tensor(values), 0.02, 3, scriptc.quint8)
    per_channel = scriptc.quantize_per_channel(scriptc.tensor(values), scriptc.tensor([0.01, 0.02]),
                                               scriptc.tensor([0, 2]), 0, scriptc.qint8)
    for q in (per_tensor, per_channel):
        for copied in (pickle.loads(pickle.dumps(q)), copy.deepcopy(q)):
            assert repr(copied) == repr(q)
            np.testing.assert_array_equal(copied.int_repr().numpy(), q.int_repr().numpy())


def test_quantized_tensors_flow_through_scripted_traced_and_loaded_graphs(tmp_path):
    def roundtrip(x):
        q = scriptc.quantize_per_tensor(x, 0.1, 2, scriptc.quint8)
        return q.dequantize() * 2 + q.int_repr().float()

    x = scriptc.randn(5)
    expected = roundtrip(x).numpy()
    np.testing.assert_array_equal(scriptc.jit.script(roundtrip)(x).numpy(), expected)
    traced = scriptc.jit.trace(roundtrip, (x,))
    np.testing.assert_array_equal(traced(x).numpy(), expected)
    traced.save(str(tmp_path / "roundtrip.sc"))
    loaded = scriptc.runtime.load(str(tmp_path / "roundtrip.sc"))
    np.testing.assert_allclose(np.asarray(loaded(x.numpy())), expected, rtol=0, atol=1e-6)
