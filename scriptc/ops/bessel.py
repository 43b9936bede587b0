"""Array kernels (float64 inside) for torch.special's Bessel functions, Hurwitz zeta and orthogonal polynomials.

Each is a fixed number of whole-array steps, chosen so float64 is accurate to about 1e-14 relative
(checked against torch in tests/ops/cases_special.py):
- I0, I1 (and e^-|x| scaled): the power series up to |x| = 30, Hankel's asymptotic series beyond;
- K0, K1 (and e^x scaled): the series with logarithms up to x = 2, Steed's continued fraction (CF2) beyond;
- J0, J1: the trapezoid rule over one period of Bessel's integral (spectrally exact) up to |x| = 30,
  Hankel's asymptotic series beyond;
- zeta(s, q): the direct sum up to q + k >= 16, Euler-Maclaurin beyond (special.polygamma's method);
- the Chebyshev, Hermite, Laguerre and Legendre polynomials: their three-term recurrences, run as far as
  the largest degree asked for.
"""

from __future__ import annotations

import math

from .special import hurwitz_zeta, quiet_float_errors

_EULER_GAMMA = 0.5772156649015329
_SERIES_LIMIT = 30.0
_TRAPEZOID_NODES = 96


def _float_result(xp, x, formula):
    """formula(float64 array) returned in x's float dtype (float32 for integer inputs)."""
    out_dtype = x.dtype if x.dtype.kind == "f" else xp.float32
    with quiet_float_errors(xp):
        return formula(x.astype(xp.float64)).astype(out_dtype)


def _hankel_terms(xp, x, order, count):
    """The terms a_k(order) / x^k of Hankel's asymptotic expansions, k = 0..count-1."""
    mu = 4.0 * order * order
    term = xp.ones_like(x)
    terms = [term]
    for k in range(1, count):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        terms.append(term)
    return terms


# --- modified Bessel functions of the first kind --------------------------------------------------------------

def scaled_bessel_i(xp, x, order):
    """exp(-|x|) I_order(|x|) for order 0 or 1 (the caller restores the sign of I1 at negative x)."""
    a = xp.abs(x)
    small = a <= _SERIES_LIMIT
    s = xp.where(small, a, 0.0)
    quarter_square = s * s / 4
    term = xp.ones_like(s) if order == 0 else s / 2
    total = term
    for k in range(1, 64):
        term = term * quarter_square / (k * (k + order))
        total = total + term
    far = xp.where(small, 2 * _SERIES_LIMIT, a)
    # I_v(x) ~ e^x / sqrt(2 pi x) * sum (-1)^k a_k(v) / x^k
    asymptotic = sum(t * (-1) ** k for k, t in enumerate(_hankel_terms(xp, far, order, 30)))
    return xp.where(small, total * xp.exp(-s), asymptotic / xp.sqrt(2 * math.pi * far))


def bessel_i(xp, x, order, scaled):
    def formula(v):
        out = scaled_bessel_i(xp, v, order)
        out = out if scaled else out * xp.exp(xp.abs(v))
        return xp.where(v < 0, -out, out) if order == 1 else out
    return _float_result(xp, x, formula)


# --- modified Bessel functions of the second kind --------------------------------------------------------------

def _bessel_k_series(xp, x):
    """(K0, K1) for 0 < x <= 2 from their series with logarithms."""
    quarter_square = x * x / 4
    log_half = xp.log(x / 2)
    term0 = xp.ones_like(x)           # (x^2/4)^k / (k!)^2
    term1 = xp.ones_like(x)           # (x^2/4)^k / (k! (k+1)!)
    harmonic = 0.0
    i0, sum0 = term0, xp.zeros_like(x)
    i1_over = term1                   # I1(x) / (x/2) as a series
    sum1 = term1 * (2 * -_EULER_GAMMA + 1)   # psi(1) + psi(2)
    for k in range(1, 30):
        term0 = term0 * quarter_square / (k * k)
        term1 = term1 * quarter_square / (k * (k + 1))
        harmonic += 1.0 / k
        i0 = i0 + term0
        sum0 = sum0 + term0 * harmonic
        i1_over = i1_over + term1
        # psi(k+1) + psi(k+2) = -2 gamma + 2 H_k + 1/(k+1)
        sum1 = sum1 + term1 * (-2 * _EULER_GAMMA + 2 * harmonic + 1.0 / (k + 1))
    k0 = -(log_half + _EULER_GAMMA) * i0 + sum0
    k1 = 1 / x + log_half * i1_over * (x / 2) - (x / 4) * sum1
    return k0, k1


def _scaled_bessel_k_fraction(xp, x):
    """(e^x K0, e^x K1) for x >= 2 by Steed's method on the continued fraction CF2 (Numerical Recipes' bessik
    with order 0)."""
    b = 2.0 * (1.0 + x)
    d = 1.0 / b
    h = delh = d
    q1, q2 = xp.zeros_like(x), xp.ones_like(x)
    a1 = 0.25
    q = c = a1
    a = -a1
    s = 1.0 + q * delh
    for i in range(2, 80):
        a -= 2 * (i - 1)
        c = -a * c / i
        q_new = (q1 - b * q2) / a
        q1, q2 = q2, q_new
        q = q + c * q_new
        b = b + 2.0
        d = 1.0 / (b + a * d)
        delh = (b * d - 1.0) * delh
        h = h + delh
        s = s + q * delh
    k0 = xp.sqrt(math.pi / (2.0 * x)) / s
    k1 = k0 * (x + 0.5 - a1 * h) / x
    return k0, k1


def bessel_k(xp, x, order, scaled):
    def formula(v):
        positive = v > 0
        near = xp.where(positive & (v <= 2), v, 1.0)
        far = xp.where((v > 2) & xp.isfinite(v), v, 2.0)
        series = _bessel_k_series(xp, near)[order]
        fraction = _scaled_bessel_k_fraction(xp, far)[order]
        out = xp.where(v > 2, fraction if scaled else fraction * xp.exp(-far),
                       series * xp.exp(near) if scaled else series)
        out = xp.where(xp.equal(v, 0), math.inf, xp.where(xp.isinf(v), 0.0, out))
        return xp.where((v < 0) | xp.isnan(v), math.nan, out)
    return _float_result(xp, x, formula)


# --- Bessel functions of the first kind -------------------------------------------------------------------------

def bessel_j(xp, x, order):
    def formula(v):
        a = xp.abs(v)
        small = a <= _SERIES_LIMIT
        s = xp.where(small, a, 0.0)
        # J_n(x) = (1/2pi) * integral over one period of cos(n t - x sin t): the trapezoid rule is exact to
        # rounding once the node count passes e x / 2.
        total = xp.zeros_like(s)
        for j in range(_TRAPEZOID_NODES):
            t = 2 * math.pi * j / _TRAPEZOID_NODES
            total = total + xp.cos(order * t - s * math.sin(t))
        near = total / _TRAPEZOID_NODES
        far = xp.where(small, 2 * _SERIES_LIMIT, a)
        terms = _hankel_terms(xp, far, order, 30)
        p = sum(t * (-1) ** (k // 2) for k, t in enumerate(terms) if k % 2 == 0)
        q = sum(t * (-1) ** (k // 2) for k, t in enumerate(terms) if k % 2 == 1)
        chi = far - (order / 2 + 0.25) * math.pi
        asymptotic = xp.sqrt(2 / (math.pi * far)) * (p * xp.cos(chi) - q * xp.sin(chi))
        # near 0 the nodes' rounding would show: the series' first terms are exact there
        square = s * s
        tiny = (1 - square / 4 + square * square / 64) if order == 0 else s / 2 * (1 - square / 8 + square * square / 192)
        out = xp.where(a < 1e-3, tiny, xp.where(small, near, asymptotic))
        return xp.where(v < 0, -out, out) if order == 1 else out
    return _float_result(xp, x, formula)


def spherical_bessel_j0(xp, x):
    def formula(v):
        nonzero = xp.where(xp.equal(v, 0), 1.0, v)
        return xp.where(xp.equal(v, 0), 1.0, xp.where(xp.isinf(v), 0.0, xp.sin(nonzero) / nonzero))
    return _float_result(xp, x, formula)


# --- Hurwitz zeta -----------------------------------------------------------------------------------------------

def zeta(xp, s, q):
    out_dtype = xp.result_type(s, q)
    out_dtype = out_dtype if out_dtype.kind == "f" else xp.float32
    with quiet_float_errors(xp):
        return hurwitz_zeta(xp, xp.asarray(s, dtype=xp.float64), xp.asarray(q, dtype=xp.float64)).astype(out_dtype)


# --- orthogonal polynomials -------------------------------------------------------------------------------------

def _recurrence(xp, x, n, first, step):
    """P_n(x) for integer degrees n (broadcast with x) from P_0 = 1, P_1 = first(x) and P_{k+1} = step(k, x, P_k,
    P_{k-1}); NaN-free because every degree runs up to the largest n and picks its own."""
    top = int(n.max()) if n.size else 0
    previous, current = xp.ones_like(x), first(x)
    out = xp.where(n <= 0, previous, xp.where(n == 1, current, 0.0))
    for k in range(1, top):
        previous, current = current, step(k, x, current, previous)
        out = xp.where(n == k + 1, current, out)
    return xp.where(n < 0, 0.0, out)


# degree-1 polynomial and three-term step of each family, in x (shifted families map x to 2x - 1 first)
POLYNOMIALS = {
    "chebyshev_polynomial_t": (lambda x: x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": (lambda x: 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": (lambda x: x, lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def polynomial(xp, name, x, n):
    """The polynomial family `name` (a POLYNOMIALS key, or shifted_chebyshev_polynomial_*) of degree n at x."""
    shifted = name.startswith("shifted_")
    first, step = POLYNOMIALS[name.removeprefix("shifted_")]
    out_dtype = xp.result_type(x, n)
    out_dtype = out_dtype if out_dtype.kind == "f" else xp.float32
    with quiet_float_errors(xp):
        v = xp.asarray(x, dtype=xp.float64)
        v = 2 * v - 1 if shifted else v
        degree = xp.trunc(xp.asarray(n, dtype=xp.float64)).astype(xp.int64)
        v, degree = xp.broadcast_arrays(v, degree)
        return _recurrence(xp, v, degree, first, step).astype(out_dtype)
