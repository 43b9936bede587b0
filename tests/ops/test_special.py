"""Float64 accuracy of the special functions (scriptc/ops/special.py) over their whole range, edges included,
against the math module (erf, erfc, lgamma), inverse checks (erfinv) and torch (digamma, polygamma)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc
from scriptc.ops import expr as E
from scriptc.ops import special as S

rng = np.random.default_rng(7)
WIDE = np.concatenate([rng.uniform(-30, 30, 400), rng.uniform(-3, 3, 400), 10.0 ** rng.uniform(-300, 300, 200),
                       -(10.0 ** rng.uniform(-300, 2, 100))])


def _ulps(got, want):
    """Error in units of the reference's last place (NaN and infinities must match exactly)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same_special = (np.isnan(got) & np.isnan(want)) | ((got == want) & ~np.isfinite(want))
    assert np.array_equal(np.isfinite(got), np.isfinite(want)) or same_special.all()
    finite = np.isfinite(want)
    return np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]).clip(np.finfo(float).tiny))


@pytest.mark.parametrize("name, reference, max_ulps", [
    ("erf", math.erf, 4), ("erfc", math.erfc, 8)])
def test_erf_and_erfc_to_a_few_ulp(name, reference, max_ulps):
    x = np.concatenate([WIDE, [0.0, -0.0, 0.46875, -0.46875, 4.0, 26.5, 27.5, -27.5, np.inf, -np.inf, np.nan]])
    got = getattr(S, name)(np, x)
    want = np.array([reference(v) for v in x])
    assert np.isnan(got[-1]) and _ulps(got[:-1], want[:-1]).max() <= max_ulps


def test_lgamma_against_math():
    x = np.concatenate([rng.uniform(0, 50, 500), rng.uniform(-20, 0, 500), 10.0 ** rng.uniform(-300, 300, 100)])
    x = x[(x > 0) | (x != np.floor(x))]
    got = S.lgamma(np, x)
    want = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=2e-14)
    edges = np.array([0.0, -0.0, -1.0, -7.0, np.inf, -np.inf, np.nan, 1.0, 2.0])
    np.testing.assert_allclose(S.lgamma(np, edges), [np.inf] * 6 + [np.nan, 0, 0], atol=1e-14)


def test_erfinv_inverts_erf():
    y = np.concatenate([rng.uniform(-1, 1, 2000), 1 - 10.0 ** -rng.uniform(1, 16, 200)])
    x = S.erfinv(np, y)
    near_one = y > 0.5
    np.testing.assert_allclose(np.array([math.erf(v) for v in x[~near_one]]), y[~near_one], rtol=4e-16, atol=2e-16)
    # Near 1 compare erfc(x) with 1 - y (exact there): the inverse keeps the tail's relative accuracy.
    np.testing.assert_allclose(np.array([math.erfc(v) for v in x[near_one]]), 1 - y[near_one], rtol=1e-13)
    edges = S.erfinv(np, np.array([1.0, -1.0, 1.5, -2.0, 0.0, -0.0, np.nan]))
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[[2, 3, 6]]).all()
    assert edges[4] == 0 and math.copysign(1, edges[5]) == -1


def test_digamma_against_torch_and_polygamma_against_mpmath():
    torch = pytest.importorskip("torch")
    mpmath = pytest.importorskip("mpmath")  # installed with torch (sympy)
    x = np.concatenate([rng.uniform(-20, 30, 1000), 10.0 ** rng.uniform(-10, 10, 100),
                        [0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan, 1e-300]])
    want = torch.digamma(torch.tensor(x)).numpy()
    got = S.digamma(np, x)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
    away = x[np.isfinite(x) & ((x > 0) | (np.abs(x - np.round(x)) > 0.05)) & (np.abs(x) < 1e6)][::10]
    for n in (1, 2, 3, 5):
        want = np.array([float(mpmath.polygamma(n, v)) for v in away])
        np.testing.assert_allclose(S.polygamma(np, n, away), want, rtol=2e-13, atol=1e-300)


@pytest.mark.parametrize("formula, kernel", [(S.erf_formula, S.erf), (S.erfc_formula, S.erfc),
                                             (S.erfinv_formula, S.erfinv), (S.lgamma_formula, S.lgamma),
                                             (S.digamma_formula, S.digamma), (S.trigamma_formula, S.trigamma)])
def test_the_scalar_expression_is_the_kernel(formula, kernel):
    x = np.concatenate([rng.uniform(-5, 5, 200), rng.uniform(-1, 1, 100)])
    tree = formula(S.EXPR_MATH, E.var(0))
    with np.errstate(all="ignore"):
        got = E.evaluate(tree, np, [x], np.float64)
    np.testing.assert_array_equal(got, kernel(np, x))


def test_float32_results_are_the_float64_results_rounded():
    x = rng.uniform(0.1, 5, 100).astype(np.float32)
    for name in ("lgamma", "digamma", "erfinv", "erfc"):
        got = getattr(scriptc, name)(scriptc.from_numpy(x if name != "erfinv" else x / 5.5))
        assert got.dtype == scriptc.float32
        want = getattr(S, name)(np, (x if name != "erfinv" else x / 5.5).astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(got.numpy(), want)
