"""Special functions numpy lacks (erf, erfc, erfinv, lgamma, digamma, trigamma, polygamma).

Each formula is written once against a small math namespace: `array_math(xp)` runs
it on arrays (the eager kernel, in float64), `EXPR_MATH` builds it as a scalar
expression (what the codegens lower). Both see the same branch-free code: every
branch is computed and `where` picks, so there are no data-dependent loops.
Accuracy in float64, checked in tests/ops/test_special.py: erf, erfc and erfinv
to a few ulp; lgamma, digamma and trigamma to about 1e-14 absolute or relative,
whichever is larger.
"""

from __future__ import annotations

import contextlib
import math
from types import SimpleNamespace

from . import expr as E

_PI = math.pi
_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_ONE_OVER_SQRT_PI = 1 / math.sqrt(math.pi)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def array_math(xp) -> SimpleNamespace:
    """The math namespace the formulas use, on arrays of array module `xp`."""
    return SimpleNamespace(where=xp.where, log=xp.log, log1p=xp.log1p, exp=xp.exp, sqrt=xp.sqrt, sin=xp.sin,
                           cos=xp.cos, floor=xp.floor, abs=xp.abs, eq=xp.equal, ne=xp.not_equal,
                           and_=xp.logical_and, or_=xp.logical_or)


EXPR_MATH = SimpleNamespace(where=E.select, log=E.log, log1p=E.log1p, exp=E.exp, sqrt=E.sqrt, sin=E.sin, cos=E.cos,
                            floor=E.floor, abs=E.abs_, eq=E.eq, ne=E.ne, and_=E.and_, or_=E.or_)


def quiet_float_errors(xp):
    """numpy's errstate(divide, invalid, over) set to ignore; cupy never warns about floating-point errors
    (it has no errstate), so there it does nothing."""
    if hasattr(xp, "errstate"):
        return xp.errstate(divide="ignore", invalid="ignore", over="ignore")
    return contextlib.nullcontext()


def on_arrays(formula):
    """An eager kernel from a formula: computed in float64, returned in x's dtype (float32 for integers)."""
    def kernel(xp, x):
        out_dtype = x.dtype if x.dtype.kind == "f" else xp.float32
        with quiet_float_errors(xp):
            return formula(array_math(xp), x.astype(xp.float64)).astype(out_dtype)
    kernel.__name__ = formula.__name__
    return kernel


def horner(coefficients, t):
    """c0 + t*(c1 + t*(c2 + ...)) for coefficients listed from c0."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = acc * t + c
    return acc


# --- erf and erfc: W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969) ----------------

_ERF_P = (3.20937758913846947e03, 3.77485237685302021e02, 1.13864154151050156e02, 3.16112374387056560e00,
          1.85777706184603153e-1)
_ERF_Q = (2.84423683343917062e03, 1.28261652607737228e03, 2.44024637934444173e02, 2.36012909523441209e01, 1.0)
_ERFC_P = (1.23033935479799725e03, 2.05107837782607147e03, 1.71204761263407058e03, 8.81952221241769090e02,
           2.98635138197400131e02, 6.61191906371416295e01, 8.88314979438837594e00, 5.64188496988670089e-1,
           2.15311535474403846e-8)
_ERFC_Q = (1.23033935480374942e03, 3.43936767414372164e03, 4.36261909014324716e03, 3.29079923573345963e03,
           1.62138957456669019e03, 5.37181101862009858e02, 1.17693950891312499e02, 1.57449261107098347e01, 1.0)
_ERFC_TAIL_P = (6.58749161529837803e-4, 1.60837851487422766e-2, 1.25781726111229246e-1, 3.60344899949804439e-1,
                3.05326634961232344e-1, 1.63153871373020978e-2)
_ERFC_TAIL_Q = (2.33520497626869185e-3, 6.05183413124413191e-2, 5.27905102951428412e-1, 1.87295284992346047e00,
                2.56852019228982242e00, 1.0)
ERF_SMALL = 0.46875


def erf_small(m, x):
    """erf for |x| <= 0.46875."""
    t = x * x
    return x * horner(_ERF_P, t) / horner(_ERF_Q, t)


def erfcx_large(m, a):
    """exp(a*a) * erfc(a) for a >= 0.46875 (any value where not: the caller's `where` discards it)."""
    t = 1 / (a * a)
    tail = (_ONE_OVER_SQRT_PI - t * horner(_ERFC_TAIL_P, t) / horner(_ERFC_TAIL_Q, t)) / a
    return m.where(a <= 4, horner(_ERFC_P, a) / horner(_ERFC_Q, a), tail)


def _erfc_large(m, a):
    """erfc for a >= 0.46875 (any value where not: the caller's `where` discards it)."""
    scaled = erfcx_large(m, a)
    # exp(-a*a) as exp(-s*s) * exp(-(a-s)(a+s)) with s = a rounded down to 1/16: s*s is exact.
    s = m.floor(a * 16) / 16
    return m.where(a > 27.3, 0.0, m.exp(-s * s) * m.exp(-(a - s) * (a + s)) * scaled)


def erf_formula(m, x):
    a = m.abs(x)
    far = 1 - _erfc_large(m, a)
    return m.where(a <= ERF_SMALL, erf_small(m, x), m.where(x < 0, -far, far))


def erfc_formula(m, x):
    a = m.abs(x)
    large = _erfc_large(m, a)
    return m.where(a <= ERF_SMALL, 1 - erf_small(m, x), m.where(x < 0, 2 - large, large))


erf = on_arrays(erf_formula)
erfc = on_arrays(erfc_formula)


# --- erfinv: Giles' approximation, then Newton steps on erf, or in the tails on log(erfc) ----------------

_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)


def erfinv_formula(m, y):
    w = m.abs(y)
    t = -m.log((1 - w) * (1 + w))
    x = m.where(t < 5, horner(_GILES_CENTRAL, t - 2.5), horner(_GILES_TAIL, m.sqrt(t) - 3)) * w
    for _ in range(4):
        # Near 1, 1 - w is exact and erfc keeps its digits; log(erfc) is nearly -x*x there, so Newton
        # converges from the float32-grade first guess, which is 0.7 off in float64's deepest tail.
        slope = TWO_OVER_SQRT_PI * m.exp(-x * x)
        tail = erfc_formula(m, x)
        central_step = (erf_formula(m, x) - w) / slope
        tail_step = -(m.log(tail) - m.log(1 - w)) * tail / slope
        x = x - m.where(w <= 0.5, central_step, tail_step)
    x = m.where(m.eq(w, 1), math.inf, m.where(w > 1, math.nan, x))
    return m.where(y < 0, -x, m.where(m.eq(y, 0), y, x))


erfinv = on_arrays(erfinv_formula)


# --- lgamma, digamma, trigamma: shift up to where the asymptotic series converges, reflect below 1/2 -----

_SHIFT = 10
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
# Magnitudes of the (alternating) asymptotic series' Bernoulli terms.
_DIGAMMA_SERIES = (1 / 12, 1 / 120, 1 / 252, 1 / 240, 1 / 132, 691 / 32760, 1 / 12)
_TRIGAMMA_SERIES = (1 / 6, 1 / 30, 1 / 42, 1 / 30, 5 / 66, 691 / 2730, 7 / 6)


def _reflected(m, x):
    """(x < 1/2, the argument >= 1/2 the series sees, |sin(pi x)| computed from x's fractional part)."""
    reflect = x < 0.5
    y = m.where(reflect, 1 - x, x)
    fraction = x - m.floor(x)
    return reflect, y, fraction


def _shifted(m, y):
    """(y shifted up by _SHIFT where small, whether it was, and the y the shift terms may read)."""
    small = y < _SHIFT
    return m.where(small, y + _SHIFT, y), small, m.where(small, y, 1.0)


def lgamma_formula(m, x):
    reflect, y, fraction = _reflected(m, x)
    z, small, base = _shifted(m, y)
    product = base
    for k in range(1, _SHIFT):
        product = product * (base + k)
    w = 1 / z
    series = w * horner(_STIRLING, w * w)
    log_gamma = (z - 0.5) * m.log(z) - z + _HALF_LOG_2PI + series - m.where(small, m.log(product), 0.0)
    # lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    reflected = _LOG_PI - m.log(m.abs(m.sin(_PI * fraction))) - log_gamma
    out = m.where(reflect, reflected, log_gamma)
    pole = m.or_(m.and_(reflect, m.eq(fraction, 0)), m.eq(m.abs(x), math.inf))
    return m.where(pole, math.inf, out)


def digamma_formula(m, x):
    reflect, y, fraction = _reflected(m, x)
    z, small, base = _shifted(m, y)
    shift_terms = 1 / base
    for k in range(1, _SHIFT):
        shift_terms = shift_terms + 1 / (base + k)
    w = 1 / z
    w2 = w * w
    psi = m.log(z) - 0.5 * w - w2 * _alternating(_DIGAMMA_SERIES, w2) - m.where(small, shift_terms, 0.0)
    # digamma(x) = digamma(1 - x) - pi / tan(pi x)
    angle = _PI * fraction
    reflected = psi - _PI * m.cos(angle) / m.sin(angle)
    out = m.where(reflect, reflected, psi)
    out = m.where(m.and_(reflect, m.eq(fraction, 0)), math.nan, out)
    # As torch: -inf at +0, +inf at -0.
    return m.where(m.eq(x, 0), m.where(1 / x < 0, math.inf, -math.inf), out)


def trigamma_formula(m, x):
    reflect, y, fraction = _reflected(m, x)
    z, small, base = _shifted(m, y)
    shift_terms = 1 / (base * base)
    for k in range(1, _SHIFT):
        shift_terms = shift_terms + 1 / ((base + k) * (base + k))
    w = 1 / z
    w2 = w * w
    psi1 = w + 0.5 * w2 + w * w2 * _alternating(_TRIGAMMA_SERIES, w2) + m.where(small, shift_terms, 0.0)
    # trigamma(x) = pi^2 / sin^2(pi x) - trigamma(1 - x)
    sine = m.sin(_PI * fraction)
    reflected = _PI * _PI / (sine * sine) - psi1
    out = m.where(reflect, reflected, psi1)
    return m.where(m.and_(reflect, m.eq(fraction, 0)), math.inf, out)


def _alternating(coefficients, t):
    """c0 - t*(c1 - t*(c2 - ...)) for the magnitudes c of an alternating series."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = c - t * acc
    return acc


lgamma = on_arrays(lgamma_formula)
digamma = on_arrays(digamma_formula)
trigamma = on_arrays(trigamma_formula)


def polygamma(xp, n: int, x):
    """The n-th derivative of digamma, for arrays: digamma and trigamma by their formulas; higher orders as
    (-1)^(n+1) n! zeta(n+1, x)."""
    if n == 0:
        return digamma(xp, x)
    if n == 1:
        return trigamma(xp, x)
    out_dtype = x.dtype if x.dtype.kind == "f" else xp.float32
    x = x.astype(xp.float64)
    with quiet_float_errors(xp):
        out = (-1) ** (n + 1) * math.factorial(n) * hurwitz_zeta(xp, xp.full(x.shape, n + 1.0), x)
        pole = (x <= 0) & (x == xp.floor(x))
        out = xp.where(pole, xp.where(n % 2 == 1, math.inf, -math.inf) if n % 2 == 0 else math.inf, out)
        out = xp.where(xp.isnan(x), math.nan, out)
    return out.astype(out_dtype)


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def hurwitz_zeta(xp, s, q):
    """sum over k >= 0 of (q + k)^-s, float64 arrays (broadcast): summed directly up to q + k >= 16 and by
    Euler-Maclaurin beyond (so any q, negative included, takes as many direct terms as it needs); inf at
    s = 1 and at the poles q = 0, -1, ..., nan for s < 1 (as torch)."""
    s, q = xp.broadcast_arrays(s, q)
    finite_q = q[xp.isfinite(q)]
    steps = int(max(0.0, math.ceil(16 - float(finite_q.min())))) if finite_q.size else 0
    total = xp.zeros(s.shape)
    for k in range(steps):
        total = total + xp.where(q + k < 16, (q + k) ** -s, 0.0)
    a = xp.where(q < 16, q + xp.ceil(16 - q), q)   # where the Euler-Maclaurin tail starts, >= 16
    a = xp.where(xp.isfinite(a), a, 16.0)
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    term, rising = a ** (-s - 1), s
    for j, bernoulli in enumerate(_BERNOULLI):
        tail = tail + bernoulli / math.factorial(2 * j + 2) * rising * term
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
        term = term / (a * a)
    out = total + tail
    out = xp.where(xp.equal(s, 1), math.inf, xp.where(s < 1, math.nan, out))
    pole = (q <= 0) & xp.equal(q, xp.floor(q))
    return xp.where(pole, math.inf, out)



# coefficients of the bivariate rational fit of the standard gamma sample's gradient (torch's)
_GAMMA_GRAD_FIT = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
                   (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
                    -0.00058392623),
                   (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
                    0.00085092367, -1.5247877e-07))


def standard_gamma_grad(xp, alpha, x):
    """d x / d alpha for a sample x of Gamma(alpha, 1), by implicit differentiation of its CDF:
    -(dF/dalpha) / f. A Taylor series for x < 0.8, Rice's saddle-point expansion for alpha > 8, a
    rational fit in (log(x / alpha), log(alpha)) between, as torch computes it. float64 inside."""
    dtype = x.dtype
    a, x = alpha.astype(xp.float64), x.astype(xp.float64)
    # each branch is evaluated on every element; where it will not be chosen it sees harmless
    # stand-in values, so no overflow is computed only to be thrown away
    with quiet_float_errors(xp):
        # small x: F = x^a sum_k (-x)^k / (k! (a + k)), differentiated in a term by term
        xs = xp.where(x < 0.8, x, 0.5)
        numer, denom = xp.ones_like(xs), a.copy()
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-xs / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = xs ** a
        pdf = xs ** (a - 1) * xp.exp(-xs)
        cdf_alpha = (xp.log(xs) - digamma(xp, a)) * pow_x_alpha * series1 - pow_x_alpha * series2
        small_x = -cdf_alpha / pdf
        small_x = xp.where(xp.isnan(small_x), 0.0, small_x)

        # large alpha: Rice's saddle-point expansion (a closed form when x is near alpha)
        al = xp.where(a > 8.0, a, 9.0)
        near = (1 + 24 * al * (1 + 12 * al)) * (1440 * al * al + 6 * x * (53 - 120 * x) - 65 * x * x / al
                                                 + al * (107 + 3600 * x)) / (1244160 * al * al * al * al)
        root = xp.sqrt(8 * al)
        term2 = root / (al - x)
        term3 = (x - al - al * xp.log(x / al)) ** -1.5
        term23 = xp.where(x < al, term2 - term3, term2 + term3)
        term1 = xp.log(x / al) * term23 - xp.sqrt(2 / al) * (al + x) / ((al - x) * (al - x))
        stirling = 1 + 1 / (12 * al) * (1 + 1 / (24 * al))
        far = -stirling * x * term1 / root
        large_alpha = xp.where((0.9 * al <= x) & (x <= 1.1 * al), near, far)

        fit = (x >= 0.8) & (a <= 8.0)
        u, v = xp.log(xp.where(fit, x / a, 1.0)), xp.log(xp.where(fit, a, 1.0))
        c = [_GAMMA_GRAD_FIT[0][i] + u * (_GAMMA_GRAD_FIT[1][i] + u * _GAMMA_GRAD_FIT[2][i]) for i in range(8)]
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        fitted = xp.exp(p / q)
    result = xp.where(x < 0.8, small_x, xp.where(a > 8.0, large_alpha, fitted))
    return result.astype(dtype, copy=False)
