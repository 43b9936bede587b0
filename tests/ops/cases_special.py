"""Cases for torch.special's own ops (special_ops.py): references from numpy, math and mpmath."""

from __future__ import annotations

import math

import numpy as np

from .cases import Case, Int, binary_cases, positive, rand, rng, unary_cases


def _mp(fn):
    """A float64 reference from an mpmath function (mpmath ships with torch's sympy dependency)."""
    def ref(*arrays):
        import mpmath

        return np.vectorize(lambda *v: float(fn(mpmath, *v)), otypes=[np.float64])(*arrays)
    return ref


def _erfc(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def _ndtr(x):
    return 0.5 * _erfc(-x / math.sqrt(2))


def _wide(*shape):
    return rand(*shape, lo=-38.0, hi=38.0)


def _wide_positive(*shape):
    return rand(*shape, lo=0.05, hi=38.0)


def _trig_chebyshev(kind):
    """Chebyshev polynomials of the four kinds at x = cos(theta) in (-1, 1), by their trigonometric forms."""
    def ref(x, n):
        theta = np.arccos(x)
        n = np.asarray(n, dtype=np.float64)
        return {"t": lambda: np.cos(n * theta), "u": lambda: np.sin((n + 1) * theta) / np.sin(theta),
                "v": lambda: np.cos((n + 0.5) * theta) / np.cos(theta / 2),
                "w": lambda: np.sin((n + 0.5) * theta) / np.sin(theta / 2)}[kind]()
    return ref


def _series(module, name):
    """numpy.polynomial's value of the degree-n member of a family, elementwise over (x, n)."""
    value = getattr(np.polynomial, module)
    return lambda x, n: np.vectorize(lambda v, k: getattr(value, name)(v, [0] * int(k) + [1]),
                                     otypes=[np.float64])(x, n)


def _polynomial_cases(ref, lo=-0.95, hi=0.95):
    return [Case((rand(3, 4, lo=lo, hi=hi), 5), ref, grad=False, label="degree 5"),
            Case((rand(2, 6, lo=lo, hi=hi), Int(rng.integers(0, 9, (2, 6)))), ref, grad=False, label="degrees")]


def _shifted(ref):
    return lambda x, n: ref(2 * x - 1, n)


def _mvlgamma_ref(x, p):
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    return sum(lgamma(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


def _lower_gamma_ref(a, x):
    """P(a, x) in closed form for the shapes the cases use: a = 1/2 is erf(sqrt(x)); integer a is
    1 - e^-x sum_{k<a} x^k / k!."""
    a, x = np.broadcast_arrays(a, x)
    out = np.empty(a.shape)
    for index in np.ndindex(a.shape):
        n, v = a[index], x[index]
        if n == 0.5:
            out[index] = math.erf(math.sqrt(v))
        else:
            out[index] = 1 - math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(int(n)))
    return out


# torch's P(a, x) where a or x is 0 or infinite: nan where both a and x are 0 or both infinite.
_INF = math.inf
_GAMMA_EDGES = (np.array([0.0, 0.0, 1.0, 0.0, _INF, _INF, 2.0, 0.0]), np.array([0.0, 1.0, 0.0, _INF, 1.0, _INF, _INF, -0.0]))
_GAMMA_EDGE_VALUES = np.array([math.nan, 1.0, 0.0, 1.0, 0.0, math.nan, 1.0, math.nan])


def _shapes_and_points(*shape):
    return rng.choice([0.5, 1.0, 2.0, 3.0, 5.0], shape), rng.uniform(0.1, 12.0, shape)


CASES = {
    "special_entr": unary_cases(lambda x: -x * np.log(x), domain=positive) + [
        Case((np.array([0.0, -1.0, 2.0]),), lambda x: np.array([0.0, -np.inf, -2 * np.log(2)]), grad=False,
             label="zero and negative")],
    "special_erfcx": unary_cases(lambda x: np.exp(x * x) * _erfc(x)),
    "special_ndtr": unary_cases(_ndtr),
    "special_log_ndtr": unary_cases(lambda x: np.log(_ndtr(x))),
    "special_ndtri": unary_cases(_mp(lambda mp, p: mp.sqrt(2) * mp.erfinv(2 * mp.mpf(p) - 1)),
                                 domain=lambda *s: rng.uniform(0.05, 0.95, s)),
    "special_xlog1py": binary_cases(lambda x, y: x * np.log1p(y), b=positive),
    "i0": unary_cases(np.i0, domain=lambda *s: rand(*s, lo=-12.0, hi=12.0))
    + [Case((_wide(3, 4),), np.i0, grad=False, rtol=1e-5, label="far")],
    "special_i0e": unary_cases(lambda x: np.i0(x) * np.exp(-np.abs(x)), domain=_wide),
    "special_i1": unary_cases(_mp(lambda mp, x: mp.besseli(1, x)), domain=lambda *s: rand(*s, lo=-12.0, hi=12.0))
    + [Case((_wide(3, 4),), _mp(lambda mp, x: mp.besseli(1, x)), grad=False, rtol=1e-5, label="far")],
    "special_i1e": unary_cases(_mp(lambda mp, x: mp.besseli(1, x) * mp.exp(-abs(x))), domain=_wide),
    "special_modified_bessel_k0": unary_cases(_mp(lambda mp, x: mp.besselk(0, x)), domain=positive, grad=False)
    + [Case((rand(3, 4, lo=2.0, hi=40.0),), _mp(lambda mp, x: mp.besselk(0, x)), grad=False, label="far")],
    "special_modified_bessel_k1": unary_cases(_mp(lambda mp, x: mp.besselk(1, x)), domain=positive, grad=False),
    "special_scaled_modified_bessel_k0": [
        Case((rand(3, 4, lo=0.1, hi=60.0),), _mp(lambda mp, x: mp.besselk(0, x) * mp.exp(x)), grad=False)],
    "special_scaled_modified_bessel_k1": [
        Case((rand(3, 4, lo=0.1, hi=60.0),), _mp(lambda mp, x: mp.besselk(1, x) * mp.exp(x)), grad=False)],
    "special_bessel_j0": unary_cases(_mp(lambda mp, x: mp.besselj(0, x)), domain=_wide, grad=False),
    "special_bessel_j1": unary_cases(_mp(lambda mp, x: mp.besselj(1, x)), domain=_wide, grad=False),
    "special_bessel_y0": unary_cases(_mp(lambda mp, x: mp.bessely(0, x)), domain=_wide_positive, grad=False),
    "special_bessel_y1": unary_cases(_mp(lambda mp, x: mp.bessely(1, x)), domain=_wide_positive, grad=False),
    "special_airy_ai": unary_cases(_mp(lambda mp, x: mp.airyai(x)), domain=lambda *s: rand(*s, lo=-40.0, hi=20.0),
                                   grad=False),
    "special_spherical_bessel_j0": unary_cases(lambda x: np.sinc(x / np.pi), domain=_wide, grad=False),
    "special_zeta": [Case((rand(3, 4, lo=1.5, hi=5.0), positive(3, 4)), _mp(lambda mp, s, q: mp.zeta(s, q)),
                          nograd=(0,)),
                     Case((2.0, positive(4)), _mp(lambda mp, s, q: mp.zeta(s, q)), label="scalar s", nograd=(0,))],
    "special_chebyshev_polynomial_t": _polynomial_cases(_trig_chebyshev("t")),
    "special_chebyshev_polynomial_u": _polynomial_cases(_trig_chebyshev("u")),
    "special_chebyshev_polynomial_v": _polynomial_cases(_trig_chebyshev("v")),
    "special_chebyshev_polynomial_w": _polynomial_cases(_trig_chebyshev("w")),
    "special_shifted_chebyshev_polynomial_t": _polynomial_cases(_shifted(_trig_chebyshev("t")), 0.03, 0.97),
    "special_shifted_chebyshev_polynomial_u": _polynomial_cases(_shifted(_trig_chebyshev("u")), 0.03, 0.97),
    "special_shifted_chebyshev_polynomial_v": _polynomial_cases(_shifted(_trig_chebyshev("v")), 0.03, 0.97),
    "special_shifted_chebyshev_polynomial_w": _polynomial_cases(_shifted(_trig_chebyshev("w")), 0.03, 0.97),
    "special_hermite_polynomial_h": _polynomial_cases(_series("hermite", "hermval")),
    "special_hermite_polynomial_he": _polynomial_cases(_series("hermite_e", "hermeval")),
    "special_laguerre_polynomial_l": _polynomial_cases(_series("laguerre", "lagval")),
    "special_legendre_polynomial_p": _polynomial_cases(_series("legendre", "legval")),
    "mvlgamma": [Case((rand(3, 4, lo=1.6, hi=5.0), 3), _mvlgamma_ref),
                 Case((rand(5, lo=0.2, hi=3.0), 1), _mvlgamma_ref, label="p=1")],
    "igamma": [Case(_shapes_and_points(3, 4), _lower_gamma_ref, nograd=(0,), rtol=1e-4, atol=1e-6),
               Case((np.array([2.0, 3.0]), rand(3, 1, lo=0.5, hi=9.0)), _lower_gamma_ref, nograd=(0,), rtol=1e-4,
                    atol=1e-6, label="broadcast"),
               Case(_GAMMA_EDGES, lambda a, x: _GAMMA_EDGE_VALUES, grad=False, label="edges")],
    "igammac": [Case(_shapes_and_points(3, 4), lambda a, x: 1 - _lower_gamma_ref(a, x), nograd=(0,), rtol=1e-4,
                     atol=1e-6),
                Case(_GAMMA_EDGES, lambda a, x: 1 - _GAMMA_EDGE_VALUES, grad=False, label="edges")],
}
