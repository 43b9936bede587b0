"""Formulas around the normal distribution for torch.special: erfcx, ndtr, log_ndtr, ndtri and entr.

Written once against the math namespace of special.py (arrays for the eager kernel, scalar
expressions for the codegens), branch-free, in float64.
"""

from __future__ import annotations

import math

from .special import ERF_SMALL, erf_small, erfc_formula, erfcx_large, horner

_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
# Abramowitz & Stegun 26.2.23: a first guess at the normal quantile of p <= 1/2 (|error| < 4.5e-4).
_AS_NUMERATOR = (2.515517, 0.802853, 0.010328)
_AS_DENOMINATOR = (1.0, 1.432788, 0.189269, 0.001308)


def erfcx_formula(m, x):
    """exp(x*x) * erfc(x): Cody's scaled tail for |x| >= 0.46875, reflected as 2 exp(x*x) - erfcx(-x) below 0."""
    a = m.abs(x)
    large = erfcx_large(m, m.where(a <= ERF_SMALL, 1.0, a))
    # exp(a*a) as exp(s*s) * exp((a-s)(a+s)) with s = a rounded down to 1/16: s*s is exact.
    s = m.floor(a * 16) / 16
    exp_square = m.exp(s * s) * m.exp((a - s) * (a + s))
    small = exp_square * (1 - erf_small(m, x))
    negative = 2 * exp_square - large
    return m.where(a <= ERF_SMALL, small, m.where(x < 0, m.where(m.eq(x, -math.inf), math.inf, negative), large))


def ndtr_formula(m, x):
    """The standard normal CDF."""
    return 0.5 * erfc_formula(m, -x * _SQRT_HALF)


def log_ndtr_formula(m, x):
    """log of the standard normal CDF: through erfcx in the left tail (no underflow), log1p on the right."""
    left = m.where(x < -1, x, -1.0)
    tail = m.log(0.5 * erfcx_formula(m, -left * _SQRT_HALF)) - 0.5 * left * left
    right = m.log1p(-0.5 * erfc_formula(m, x * _SQRT_HALF))
    return m.where(x < -1, tail, right)


def ndtri_formula(m, p):
    """The standard normal quantile: A&S's guess in the lower half, then Newton steps on log(ndtr) (as exact
    at 1e-300 as at 0.3); the upper half by symmetry, 1 - p being exact there."""
    q = m.where(p > 0.5, 1 - p, p)
    safe = m.where(m.and_(q > 0, q <= 0.5), q, 0.25)
    t = m.sqrt(-2 * m.log(safe))
    x = -(t - horner(_AS_NUMERATOR, t) / horner(_AS_DENOMINATOR, t))
    log_q = m.log(safe)
    for _ in range(4):
        log_cdf = log_ndtr_formula(m, x)
        # d log(ndtr)/dx = pdf / cdf
        slope = m.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_cdf)
        x = x - (log_cdf - log_q) / slope
    x = m.where(p > 0.5, -x, m.where(m.eq(p, 0.5), 0.0, x))
    x = m.where(m.eq(p, 0), -math.inf, m.where(m.eq(p, 1), math.inf, x))
    return m.where(m.or_(m.or_(p < 0, p > 1), m.ne(p, p)), math.nan, x)


def entr_formula(m, x):
    """-x log x: 0 at 0, -inf below it."""
    positive = m.where(x > 0, x, 1.0)
    return m.where(x > 0, -positive * m.log(positive), m.where(m.eq(x, 0), 0.0, m.where(x < 0, -math.inf, x)))
