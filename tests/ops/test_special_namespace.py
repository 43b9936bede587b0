"""torch.special: float64 accuracy of the Bessel, normal-distribution and zeta kernels over their whole range
(against mpmath, which ships with torch's sympy dependency), edge values, errors and the namespace's names,
against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")
mpmath = pytest.importorskip("mpmath")

rng = np.random.default_rng(11)
WIDE = np.concatenate([rng.uniform(-50, 50, 120), rng.uniform(-3, 3, 60), [0.0, 1e-8, 2.0, 30.0, 30.5, 700.0]])
POSITIVE = np.concatenate([rng.uniform(1e-3, 60, 120), 10.0 ** rng.uniform(-8, 2, 40), [2.0, 600.0]])


def _reference(fn, x):
    with mpmath.workdps(40):
        return np.array([float(fn(mpmath.mpf(v))) for v in x])


def _envelope(x):
    """J0 and J1 have zeros: their error is measured against the envelope sqrt(2 / (pi x))."""
    return np.minimum(1, np.sqrt(2 / (np.pi * np.abs(x))))


def _airy_envelope(x):
    """Ai oscillates left of 0 within |x|^(-1/4) / sqrt(pi); right of 0 its error is relative."""
    return np.where(x < 0, np.minimum(1, np.maximum(np.abs(x), 1.0) ** -0.25 / np.sqrt(np.pi)), np.nan)


AIRY = np.concatenate([rng.uniform(-160, 0, 100), rng.uniform(0, 103, 60), rng.uniform(-3, 3, 40),
                       [0.0, -1.0, 1.0, 2.09, -2.09, 8.33, 103.8]])


def _log_ndtr(v):
    return mpmath.log(mpmath.ncdf(v)) if v < 0 else mpmath.log1p(-mpmath.ncdf(-v))


@pytest.mark.parametrize("name, fn, x, scale, tolerance", [
    ("i0e", lambda v: mpmath.besseli(0, v) * mpmath.exp(-abs(v)), WIDE, None, 5e-14),
    ("i1e", lambda v: mpmath.besseli(1, v) * mpmath.exp(-abs(v)), WIDE, None, 5e-14),
    ("scaled_modified_bessel_k0", lambda v: mpmath.besselk(0, v) * mpmath.exp(v), POSITIVE, None, 5e-14),
    ("scaled_modified_bessel_k1", lambda v: mpmath.besselk(1, v) * mpmath.exp(v), POSITIVE, None, 5e-14),
    ("bessel_j0", lambda v: mpmath.besselj(0, v), WIDE, _envelope, 5e-14),
    ("bessel_j1", lambda v: mpmath.besselj(1, v), WIDE, _envelope, 5e-14),
    ("bessel_y0", lambda v: mpmath.bessely(0, v), POSITIVE, _envelope, 1e-12),
    ("bessel_y1", lambda v: mpmath.bessely(1, v), POSITIVE[POSITIVE > 1e-3], _envelope, 1e-12),
    ("airy_ai", mpmath.airyai, AIRY, _airy_envelope, 5e-11),
    ("log_ndtr", _log_ndtr, np.concatenate([WIDE, [-300.0, -38.0, 8.0]]), None, 2e-13),
    ("erfcx", lambda v: mpmath.exp(v * v) * mpmath.erfc(v), np.concatenate([rng.uniform(-25, 25, 100), [1e4]]),
     None, 5e-14),
])
def test_float64_accuracy(name, fn, x, scale, tolerance):
    got = getattr(scriptc.special, name)(scriptc.tensor(x)).numpy()
    want = _reference(fn, x)
    relative = np.where(want == 0, 1.0, np.abs(want))
    error = np.abs(got - want) / (np.where(np.isnan(scale(x)), relative, scale(x)) if scale else relative)
    assert error.max() < tolerance, (name, x[np.argmax(error)])


def test_ndtri_inverts_ndtr_into_the_tails():
    p = np.concatenate([10.0 ** -rng.uniform(1, 300, 50), rng.uniform(0, 1, 50)])
    x = scriptc.special.ndtri(scriptc.tensor(p)).numpy()
    with mpmath.workdps(40):
        back = np.array([float(mpmath.ncdf(mpmath.mpf(v))) for v in x])
    # p's relative error is about |x|^2 times x's: 1e-16 in x is ~1e-13 in p at x = -37
    np.testing.assert_allclose(back, p, rtol=1e-12)


EDGES = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-300, 750.0, -750.0]


@pytest.mark.parametrize("name", ["entr", "erfcx", "ndtr", "log_ndtr", "i0", "i0e", "i1", "i1e", "bessel_j0",
                                  "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai", "modified_bessel_k0", "modified_bessel_k1",
                                  "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"])
def test_edge_values_match_torch(name):
    ours = getattr(scriptc.special, name)(scriptc.tensor(EDGES, dtype=scriptc.float64)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(EDGES, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize("name", ["bessel_y0", "bessel_y1", "airy_ai"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_second_kind_and_airy_match_torch(name, dtype):
    x = np.concatenate([rng.uniform(-20, 40, 200), rng.uniform(0, 3, 50)])
    ours = getattr(scriptc.special, name)(scriptc.tensor(x, dtype=getattr(scriptc, dtype)))
    theirs = getattr(torch.special, name)(torch.tensor(x, dtype=getattr(torch, dtype)))
    assert str(ours.dtype) == str(theirs.dtype) and not ours.requires_grad
    # torch's float64 Cephes approximations are good to about 1e-5 relative; ours to about 1e-13
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5, equal_nan=True)
    ints = getattr(scriptc.special, name)(scriptc.tensor([1, 2, 3]))
    assert ints.dtype == scriptc.float32


def test_ndtri_edges_match_torch():
    p = [0.0, 1.0, 0.5, -0.1, 1.1, float("nan")]
    np.testing.assert_array_equal(scriptc.special.ndtri(scriptc.tensor(p, dtype=scriptc.float64)).numpy(),
                                  torch.special.ndtri(torch.tensor(p, dtype=torch.float64)).numpy())


def test_zeta_poles_and_domain_match_torch():
    s, q = [1.0, 0.5, 2.0, 2.0, 3.0], [1.0, 1.0, 0.0, -1.0, -1.5]
    ours = scriptc.special.zeta(scriptc.tensor(s, dtype=scriptc.float64), scriptc.tensor(q, dtype=scriptc.float64))
    theirs = torch.special.zeta(torch.tensor(s, dtype=torch.float64), torch.tensor(q, dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, equal_nan=True)


def test_mvlgamma_edges_and_errors_match_torch():
    x = [1.0, 0.2, -0.5, 3.0]
    np.testing.assert_allclose(scriptc.mvlgamma(scriptc.tensor(x), 2).numpy(), torch.mvlgamma(torch.tensor(x), 2).numpy(),
                               rtol=1e-6)
    with pytest.raises(RuntimeError) as theirs:
        torch.special.multigammaln(torch.ones(3), 0)
    with pytest.raises(RuntimeError) as ours:
        scriptc.special.multigammaln(scriptc.ones(3), 0)
    assert str(ours.value) == str(theirs.value)


def test_namespace_names():
    assert scriptc.special.expit is scriptc.sigmoid and scriptc.special.gammaln is scriptc.lgamma
    assert scriptc.special.psi is scriptc.digamma and scriptc.special.multigammaln is scriptc.mvlgamma
    ours = {n for n in dir(scriptc.special) if not n.startswith("_")}
    theirs = {n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))}
    assert ours <= theirs
    x = scriptc.tensor([0.5, 2.0])
    np.testing.assert_allclose(scriptc.special.softmax(x, 0).numpy(), torch.special.softmax(torch.tensor([0.5, 2.0]),
                                                                                            0).numpy(), rtol=1e-6)


def test_missing_name_points_to_the_api_page():
    missing = sorted(n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
                     and not hasattr(scriptc.special, n))
    for name in missing:
        with pytest.raises(AttributeError, match="docs/api.md"):
            getattr(scriptc.special, name)
    with pytest.raises(AttributeError, match="Did you mean: 'erfcx'"):
        scriptc.special.erfcxx  # noqa: B018
