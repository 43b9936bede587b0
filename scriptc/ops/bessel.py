"""Array kernels (float64 inside) for torch.special's Bessel functions, Hurwitz zeta and orthogonal polynomials.

Each is a fixed number of whole-array steps, chosen so float64 is accurate to about 1e-14 relative
(checked against torch in tests/ops/cases_special.py):
- I0, I1 (and e^-|x| scaled): the power series up to |x| = 30, Hankel's asymptotic series beyond;
- K0, K1 (and e^x scaled): the series with logarithms up to x = 2, Steed's continued fraction (CF2) beyond;
- J0, J1: the trapezoid rule over one period of Bessel's integral (spectrally exact) up to |x| = 30,
  Hankel's asymptotic series beyond;
- Y0, Y1: the series with logarithms up to x = 2, Schlafli's integrals by 96-point Gauss-Legendre up to 30,
  Hankel's series beyond;
- Airy Ai: the Maclaurin series for |x| <= 1; right of it sqrt(x/3) K_{1/3}(zeta) / pi with K's integral by
  Gauss-Legendre; left of it sqrt(y)/3 (J_{1/3} + J_{-1/3})(zeta) by Schlafli's integrals (Hankel's series once
  zeta > 30), zeta = 2/3 |x|^(3/2);
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

def _hankel_bessel(xp, x, order, second_kind=False):
    """J_order(x) (or Y_order(x)) for large x by Hankel's asymptotic expansion (any real order)."""
    terms = _hankel_terms(xp, x, order, 30)
    p = sum(t * (-1) ** (k // 2) for k, t in enumerate(terms) if k % 2 == 0)
    q = sum(t * (-1) ** (k // 2) for k, t in enumerate(terms) if k % 2 == 1)
    chi = x - (order / 2 + 0.25) * math.pi
    if second_kind:
        return xp.sqrt(2 / (math.pi * x)) * (p * xp.sin(chi) + q * xp.cos(chi))
    return xp.sqrt(2 / (math.pi * x)) * (p * xp.cos(chi) - q * xp.sin(chi))


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
        asymptotic = _hankel_bessel(xp, far, order)
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


# --- Bessel functions of the second kind, Airy Ai ----------------------------------------------------------------

_GAUSS_NODES = 96


def _gauss_integral(xp, integrand, upper):
    """The integral of integrand(t) over [0, upper] (an array of upper limits) by Gauss-Legendre."""
    import numpy

    nodes, weights = numpy.polynomial.legendre.leggauss(_GAUSS_NODES)
    half = upper / 2
    total = xp.zeros_like(upper)
    for node, weight in zip(nodes, weights):
        total = total + weight * integrand(half * (node + 1))
    return total * half


def _bessel_pair_integrals(xp, z, order):
    """(1/pi) times the two integrals of Schlafli's representations, for z >= 1:
    A = integral over [0, pi] of cos(order t - z sin t), S = integral over [0, pi] of sin(z sin t - order t),
    and the tail integrand's integral over [0, inf) of e^{-z sinh t} e^{-order t} (both signs of order are
    asked for by the callers), truncated where e^{-z sinh t} < e^{-42}."""
    pi_limit = xp.full_like(z, math.pi)
    cos_part = _gauss_integral(xp, lambda t: xp.cos(order * t - z * xp.sin(t)), pi_limit) / math.pi
    sin_part = _gauss_integral(xp, lambda t: xp.sin(z * xp.sin(t) - order * t), pi_limit) / math.pi
    tail_limit = xp.arcsinh(42.0 / z)
    tails = {sign: _gauss_integral(xp, lambda t, s=sign: xp.exp(-z * xp.sinh(t) - s * order * t), tail_limit)
             / math.pi for sign in (1, -1)}
    return cos_part, sin_part, tails


def _bessel_y_series(xp, x, order):
    """Y0 or Y1 for 0 < x <= 2 from their series with logarithms."""
    quarter_square = x * x / 4
    log_term = xp.log(x / 2) + _EULER_GAMMA
    term = xp.ones_like(x) if order == 0 else x / 2   # (x/2)^(2k+order) / (k! (k+order)!)
    harmonic, total = 0.0, xp.zeros_like(x) if order == 0 else term * (2 * -_EULER_GAMMA + 1)
    for k in range(1, 30):
        term = term * -quarter_square / (k * (k + order))
        harmonic += 1.0 / k
        # Y0: sum (-1)^(k+1) H_k (x^2/4)^k/(k!)^2;  Y1: sum (-1)^k (psi(k+1) + psi(k+2)) (x/2)^(2k+1)/(k!(k+1)!)
        total = total - term * harmonic if order == 0 else \
            total + term * (-2 * _EULER_GAMMA + 2 * harmonic + 1.0 / (k + 1))
    if order == 0:
        return (2 / math.pi) * (log_term * bessel_j(xp, x, 0) + total)
    return -2 / (math.pi * x) + (2 / math.pi) * xp.log(x / 2) * bessel_j(xp, x, 1) - total / math.pi


def bessel_y(xp, x, order):
    def formula(v):
        near = xp.where((v > 0) & (v <= 2), v, 1.0)
        middle = xp.where((v > 2) & (v <= _SERIES_LIMIT), v, 3.0)
        far = xp.where(v > _SERIES_LIMIT, v, 2 * _SERIES_LIMIT)
        _, sin_part, tails = _bessel_pair_integrals(xp, middle, order)
        # Y_n(z) = S - (1/pi) integral of (e^{nt} + (-1)^n e^{-nt}) e^{-z sinh t}
        integral = sin_part - tails[-1] - (-1) ** order * tails[1]
        asymptotic = _hankel_bessel(xp, far, order, second_kind=True)
        out = xp.where(v <= 2, _bessel_y_series(xp, near, order),
                       xp.where(v <= _SERIES_LIMIT, integral, asymptotic))
        # torch (Cephes) gives -inf at 0 and nan below 0 and at +inf
        out = xp.where(xp.equal(v, 0), -math.inf, out)
        return xp.where((v < 0) | ~xp.isfinite(v), math.nan, out)
    return _float_result(xp, x, formula)


_AIRY_AI0 = 0.355028053887817239260      # Ai(0)
_AIRY_SLOPE0 = 0.258819403792806798405   # -Ai'(0)
_AIRY_ZERO_BEYOND = 103.892              # Ai underflows float64 past here


def airy_ai(xp, x):
    def formula(v):
        small = xp.abs(v) <= 1
        s = xp.where(small, v, 0.0)
        cube = s * s * s
        f_term, g_term = xp.ones_like(s), s.copy()
        f, g = f_term, g_term
        for k in range(1, 20):
            f_term = f_term * cube / ((3 * k - 1) * (3 * k))
            g_term = g_term * cube / ((3 * k) * (3 * k + 1))
            f, g = f + f_term, g + g_term
        series = _AIRY_AI0 * f - _AIRY_SLOPE0 * g
        # x > 1: Ai(x) = sqrt(x/3) K_{1/3}(zeta) / pi with K_nu(z) = integral of e^{-z cosh t} cosh(nu t)
        right = xp.where(v > 1, xp.minimum(v, _AIRY_ZERO_BEYOND), 2.0)
        zeta = 2 / 3 * right * xp.sqrt(right)
        scaled_k = _gauss_integral(xp, lambda t: xp.exp(-zeta * (xp.cosh(t) - 1)) * xp.cosh(t / 3),
                                   xp.arccosh(1 + 42.0 / zeta))
        positive = xp.sqrt(right / 3) * scaled_k * xp.exp(-zeta) / math.pi
        # x < -1: Ai(-y) = sqrt(y)/3 (J_{1/3} + J_{-1/3})(zeta), J_nu = A_nu - sin(nu pi) / pi * tail
        y = xp.where(v < -1, -v, 2.0)
        zeta_left = 2 / 3 * y * xp.sqrt(y)
        near = xp.where(zeta_left <= _SERIES_LIMIT, zeta_left, 2.0)
        far = xp.where(zeta_left > _SERIES_LIMIT, zeta_left, 2 * _SERIES_LIMIT)
        both = 0.0
        for order in (1 / 3, -1 / 3):
            cos_part, _, tails = _bessel_pair_integrals(xp, near, order)
            both = both + xp.where(zeta_left <= _SERIES_LIMIT, cos_part - math.sin(order * math.pi) * tails[1],
                                   _hankel_bessel(xp, far, order))
        negative = xp.sqrt(y) / 3 * both
        out = xp.where(small, series, xp.where(v > 0, positive, negative))
        out = xp.where(v > _AIRY_ZERO_BEYOND, 0.0, out)
        return xp.where(~xp.isfinite(v), math.nan, out)
    return _float_result(xp, x, formula)
