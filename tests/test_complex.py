"""complex64/complex128 end to end, against torch 2.13: creation, promotion, printing, views, casts,
autograd in PyTorch's conjugate convention, errors, and tracing through the runtime."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)
Z = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)


def _same_repr(code):
    expected = repr(eval(code, {"T": torch}))
    actual = repr(eval(code, {"T": scriptc}))
    assert actual.replace("scriptc.", "torch.") == expected


@pytest.mark.parametrize("code", [
    "T.tensor([[1+2j, -3.5-1e-3j], [0j, 100+0.5j]])",
    "T.tensor([1e10+1j, 2j])",
    "T.tensor([1+2j, 3+4j], dtype=T.complex128)",
    "T.tensor([complex(float('nan'), 1), complex(float('inf'), -float('inf'))])",
    "T.tensor([1.5+2j] * 1200)",
    "T.zeros(0, dtype=T.complex64)",
    "T.tensor(-0.0-0.0j)",
    "T.tensor([0.25-1j]).requires_grad_()",
])
def test_printing_matches_torch(code):
    _same_repr(code)


DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]
SCALARS = [True, 2, 2.5, 1j]


def _operand(lib, kind, name):
    dt = getattr(lib, name)
    return lib.ones(2, dtype=dt) if kind == "tensor" else lib.ones((), dtype=dt)


@pytest.mark.parametrize("left", DTYPES)
def test_promotion_matches_torch(left):
    for right in DTYPES:
        for kind in ("tensor", "0-d"):
            if left == "float16" and right.startswith("complex") and kind == "0-d":
                continue  # torch gives complex32 (ComplexHalf), a dtype scriptc does not have
            expected = (_operand(torch, "tensor", left) + _operand(torch, kind, right)).dtype
            actual = (_operand(scriptc, "tensor", left) + _operand(scriptc, kind, right)).dtype
            assert str(actual).replace("scriptc", "torch") == str(expected), (left, kind, right)
    for scalar in SCALARS:
        if left == "float16" and isinstance(scalar, complex):
            continue  # complex32 again
        expected = (_operand(torch, "tensor", left) * scalar).dtype
        actual = (_operand(scriptc, "tensor", left) * scalar).dtype
        assert str(actual).replace("scriptc", "torch") == str(expected), (left, scalar)


def test_creation_and_conversion():
    assert scriptc.tensor([1 + 2j]).dtype is scriptc.complex64 is scriptc.cfloat
    assert scriptc.tensor(3j).dtype is scriptc.complex64
    assert scriptc.tensor([1, 2.5, 1j]).dtype is scriptc.complex64
    a = np.array([1 + 1j, 2 - 1j])
    t = scriptc.from_numpy(a)
    assert t.dtype is scriptc.complex128 is scriptc.cdouble and t.is_complex() and scriptc.is_complex(t)
    assert not scriptc.ones(2).is_complex() and not t.is_floating_point()
    assert scriptc.ones(2).to(scriptc.complex64).dtype is scriptc.complex64
    assert scriptc.ones(2).cdouble().dtype is scriptc.complex128 and t.cfloat().dtype is scriptc.complex64
    assert scriptc.tensor(1 + 2j).item() == 1 + 2j and complex(scriptc.tensor(2j)) == 2j


def test_casting_to_real_drops_the_imaginary_part_with_torch_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = scriptc.tensor(Z).float()
    assert "Casting complex values to real discards the imaginary part" in str(caught[0].message)
    np.testing.assert_array_equal(out.numpy(), Z.real)


def test_real_and_imag_are_views():
    t = scriptc.tensor(Z)
    t.real.mul_(0)
    t.imag += 1
    np.testing.assert_allclose(t.numpy(), 1j * (Z.imag + 1), rtol=1e-6)
    r = scriptc.ones(3)
    assert r.real.numpy().base is not None or np.shares_memory(r.real.numpy(), r.numpy())
    v = scriptc.view_as_real(t)
    v[0, 0, 0] = 5.0
    assert t[0, 0].item() == 5 + (Z.imag[0, 0] + 1) * 1j


def _chain(T, z, w):
    y = (z * z.conj()).real.sum() + (z.exp() * w).abs().sum()
    y = y + T.view_as_real(z @ z.mT).pow(2).sum() + T.angle(z * 1j).sum() + (z.sgn() * w).real.sum()
    return y + T.polar(z.abs(), z.angle()).imag.sum() + (1 / z).sin().tanh().real.sum()


def test_gradients_match_torch():
    w = (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64)
    grads = []
    for T in (torch, scriptc):
        z = T.tensor(Z, requires_grad=True)
        _chain(T, z, T.tensor(w)).backward()
        grads.append(z.grad.resolve_conj().numpy() if T is torch else z.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-4, atol=1e-4)


def test_real_leaves_of_complex_results_get_real_gradients():
    for T in (torch, scriptc):
        x = T.tensor([0.5, -1.0], requires_grad=True)
        y = T.tensor([2.0, 0.25], requires_grad=True)
        (T.complex(x, y) * (1 - 2j)).exp().abs().sum().backward()
        if T is torch:
            expected = (x.grad.numpy(), y.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected[0], rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), expected[1], rtol=1e-5)
    assert x.grad.dtype is scriptc.float32


def test_gradcheck_on_complex_inputs():
    z = scriptc.tensor(Z.astype(np.complex128), requires_grad=True)
    assert scriptc.autograd.gradcheck(lambda a: (a * a.conj() + a.exp()).sum() * (2 - 1j), [z])





def test_trace_with_complex_constants_runs_in_the_runtime(tmp_path):
    import scriptc.runtime

    def f(x):
        return (x * 1j).exp().real + scriptc.tensor([1 + 2j, 3j]).imag + scriptc.view_as_real(x * (1 - 1j)).sum(-1)

    x = scriptc.randn(2)
    traced = scriptc.jit.trace(f, (x,))
    path = tmp_path / "complex.sc"
    traced.save(str(path))
    np.testing.assert_allclose(np.asarray(scriptc.runtime.load(str(path))(x)), f(x).numpy(), rtol=1e-6)
