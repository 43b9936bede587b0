"""bfloat16 as a storage dtype, against torch 2.13: rounding, conversions, printing, promotion, ops that
compute in float32, views, raw bytes, and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(77)
SPECIAL = np.array([0.0, -0.0, 1.0, -2.5, 1 / 3, 3.14159, 1e-3, 1e10, -1e38, 3.4e38, 1e-40, np.inf, -np.inf, np.nan,
                    1.00390625, 1.01171875, 65504.0], dtype=np.float32)


def _bits(t):
    """A bfloat16 tensor's 16-bit patterns."""
    if isinstance(t, torch.Tensor):
        return t.view(torch.int16).numpy().view(np.uint16)
    return np.frombuffer(t._data.tobytes(), dtype=np.uint16).reshape(t.shape)


@pytest.mark.parametrize("values", [SPECIAL, rng.standard_normal(1000).astype(np.float32) * 10.0 ** rng.integers(
    -30, 30, 1000), rng.standard_normal(50)])
def test_rounding_to_nearest_even_matches_torch(values):
    expected = torch.tensor(values).to(torch.bfloat16)
    actual = scriptc.tensor(values).to(scriptc.bfloat16)
    np.testing.assert_array_equal(_bits(actual), _bits(expected))
    np.testing.assert_array_equal(actual.float().numpy(), expected.float().numpy())
    np.testing.assert_array_equal(scriptc.tensor(values, dtype=scriptc.bfloat16).float().numpy(),
                                  expected.float().numpy())


def test_storage_properties():
    t = scriptc.ones(2, 3, dtype=scriptc.bfloat16)
    assert t.dtype is scriptc.bfloat16 and t.element_size() == 2 and t.is_floating_point()
    assert t.tolist() == [[1.0] * 3] * 2 and scriptc.tensor(1 / 3, dtype=scriptc.bfloat16).item() == 0.333984375
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        t.numpy()
    raw = t._data.tobytes()
    back = scriptc.from_numpy(np.frombuffer(raw, dtype=scriptc.bfloat16.np).reshape(2, 3).copy())
    assert back.dtype is scriptc.bfloat16 and back.float().tolist() == t.float().tolist()


@pytest.mark.parametrize("code", [
    "T.tensor([1.0, 2.5, 1e-3, 3.14159, 1e10]).bfloat16()",
    "T.tensor([1/3, 100.7, -2e-5], dtype=T.bfloat16)",
    "T.zeros(2, 2, dtype=T.bfloat16)",
    "T.ones(3, dtype=T.bfloat16) * 2.5",
])
def test_printing_matches_torch(code):
    expected = repr(eval(code, {"T": torch}))
    assert repr(eval(code, {"T": scriptc})).replace("scriptc.", "torch.") == expected


@pytest.mark.parametrize("other", ["float16", "float32", "float64", "int64", "bool", "complex64"])
def test_promotion_matches_torch(other):
    for kind in ("tensor", "0-d"):
        results = []
        for T in (torch, scriptc):
            shape = (2,) if kind == "tensor" else ()
            results.append((T.ones(2, dtype=T.bfloat16) + T.ones(shape, dtype=getattr(T, other))).dtype)
        assert str(results[1]).replace("scriptc", "torch") == str(results[0]), (other, kind)
    assert (scriptc.ones(2, dtype=scriptc.bfloat16) + 2.5).dtype is scriptc.bfloat16


A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 2)).astype(np.float32)


@pytest.mark.parametrize("code", [
    "x + 1.5", "x * x", "x.exp()", "x.sum()", "x.sum(1)", "x.mean(0)", "x @ y", "x.softmax(-1)", "x.relu()",
    "T.cat([x, x.neg()])", "x.t().contiguous()", "x[1:, ::2]", "x.max(1).values", "x.argmax()", "x > 0",
    "T.nn.functional.linear(x, y.t())",
])
def test_ops_compute_in_float32_and_round_like_torch(code):
    results = []
    for T in (torch, scriptc):
        x, y = T.tensor(A).to(T.bfloat16), T.tensor(B).to(T.bfloat16)
        results.append(eval(code, {"T": T, "x": x, "y": y}))
    expected, actual = results
    assert str(actual.dtype).replace("scriptc", "torch") == str(expected.dtype)
    if expected.dtype == torch.bfloat16:
        np.testing.assert_allclose(actual.float().numpy(), expected.float().numpy(), rtol=1e-2, atol=1e-2)
    else:
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


def test_views_share_the_patterns():
    t = scriptc.tensor(A).to(scriptc.bfloat16)
    v = t.view(12)
    v[0] = 7.0
    t.t()[1, 0] = -3.0
    assert t[0, 0].item() == 7.0 and t[0, 1].item() == -3.0 and v._data.base is not None
    t[1] = 0.5
    assert t[1].tolist() == [0.5] * 4
    t.fill_(2.25)
    assert t.float().tolist() == [[2.25] * 4] * 3


def test_gradients_match_torch():
    grads = []
    for T in (torch, scriptc):
        w = T.tensor(A, requires_grad=True)
        leaf = T.tensor(B).to(T.bfloat16).requires_grad_()
        out = (w.to(T.bfloat16) @ leaf).float().tanh().sum() + (leaf * leaf).sum().float()
        out.backward()
        grads.append((w.grad, leaf.grad))
    np.testing.assert_allclose(grads[1][0].numpy(), grads[0][0].numpy(), rtol=2e-2, atol=2e-2)
    assert grads[1][1].dtype is scriptc.bfloat16
    np.testing.assert_allclose(grads[1][1].float().numpy(), grads[0][1].float().numpy(), rtol=2e-2, atol=2e-2)


def _bfloat16_facts(x):
    return (x.dtype == scriptc.bfloat16, x.element_size(), x.nbytes, scriptc.tensor([1.5, 2.0], dtype=scriptc.bfloat16),
            scriptc.zeros(2, dtype=scriptc.bfloat16).dtype == scriptc.bfloat16)


def test_scripted_code_reads_a_bfloat16_tensors_dtype_and_makes_bfloat16_tensors():
    x = scriptc.ones(3, dtype=scriptc.bfloat16)
    is_bfloat16, element_size, nbytes, made, zeros_are_bfloat16 = scriptc.jit.script(_bfloat16_facts)(x)
    assert is_bfloat16 and zeros_are_bfloat16 and (element_size, nbytes) == (2, 6)
    assert made.dtype == scriptc.bfloat16 and made.float().tolist() == [1.5, 2.0]
