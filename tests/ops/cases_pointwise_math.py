"""Cases for pointwise math (pointwise_math.py): references in float64 numpy or the math module."""

from __future__ import annotations

import math

import numpy as np

from .cases import Case, Int, binary_cases, positive, rand, rng, unary_cases


def _within(lo, hi):
    return lambda *shape: rng.uniform(lo, hi, shape)


def _vectorized(fn):
    return np.vectorize(fn, otypes=[np.float64])


def _off_integers(*shape):
    """Values in (-4, 4) at least 0.1 from every integer (where gamma and its derivatives have poles)."""
    whole = rng.integers(-4, 4, shape)
    return whole + rng.uniform(0.1, 0.9, shape)


def _digamma_scalar(x: float) -> float:
    """Reference digamma, independent of the kernel: recurrence up to 30, then the asymptotic series."""
    if x <= 0 and x == math.floor(x):
        return math.nan if x < 0 else -math.inf
    if x < 0.5:
        return _digamma_scalar(1 - x) - math.pi / math.tan(math.pi * x)
    total = 0.0
    while x < 30:
        total -= 1 / x
        x += 1
    w2 = 1 / (x * x)
    return total + math.log(x) - 0.5 / x - w2 * (1 / 12 - w2 * (1 / 120 - w2 * (1 / 252 - w2 / 240)))


def _erfinv_scalar(y: float) -> float:
    """Reference erfinv by bisection on math.erf (and math.erfc near 1)."""
    if abs(y) >= 1:
        return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
    lo, hi = -7.0, 7.0
    for _ in range(200):
        mid = (lo + hi) / 2
        below = math.erf(mid) < y if abs(y) < 0.5 else (
            (1 - y) < math.erfc(mid) if y > 0 else math.erfc(-mid) < 1 + y)
        lo, hi = (mid, hi) if below else (lo, mid)
    return (lo + hi) / 2


def _polygamma_ref(n, x):
    """(-1)^(n+1) n! zeta(n+1, x): 2000 direct terms and the Euler-Maclaurin tail."""
    s = n + 1
    k = np.arange(2000).reshape((-1,) + (1,) * np.ndim(x))
    a = x + 2000
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s * a ** (-s - 1) / 12
    return (-1) ** (n + 1) * math.factorial(n) * (np.sum((x + k) ** -float(s), axis=0) + tail)


def _round_ref(x, decimals=0):
    scale = 10.0 ** abs(decimals)
    return np.rint(x * scale) / scale if decimals >= 0 else np.rint(x / scale) * scale


def _lerp_ref(start, end, weight):
    return np.where(np.abs(weight) < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight))


def _logaddexp_cases(ref):
    return binary_cases(ref, scalar=None) + [
        Case((np.array([-np.inf, np.inf, 1.0]), np.array([-np.inf, np.inf, -np.inf])), ref, grad=False,
             label="infinities")]


def _ints(*shape):
    return Int(rng.integers(-9, 9, shape))


def _nonzero_ints(*shape):
    return Int(rng.choice([-7, -3, -2, -1, 1, 2, 3, 5], shape))


def _nan_ignoring(pick):
    return lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, pick(a, b)))


CASES = {
    "fmax": binary_cases(np.fmax, scalar=None) + [
        Case((np.array([np.nan, 1.0, np.nan]), np.array([2.0, np.nan, np.nan])), _nan_ignoring(np.maximum),
             grad=False, label="nan")],
    "fmin": binary_cases(np.fmin, scalar=None) + [
        Case((np.array([np.nan, 1.0, np.nan]), np.array([2.0, np.nan, np.nan])), _nan_ignoring(np.minimum),
             grad=False, label="nan")],
    "addcmul": [Case((rand(3, 4), rand(3, 4), rand(4)), lambda x, a, b: x + a * b),
                Case((rand(3, 4), rand(3, 1), rand(4)), lambda x, a, b, value: x + value * a * b,
                     kwargs={"value": -0.5}, label="value")],
    "addcdiv": [Case((rand(3, 4), rand(3, 4), positive(4)), lambda x, a, b: x + a / b),
                Case((rand(3, 4), rand(4), positive(3, 1)), lambda x, a, b, value: x + value * a / b,
                     kwargs={"value": 2.0}, label="value")],
    "clamp_min": [Case((rand(3, 4), rand(4)), np.maximum), Case((rand(3, 4), 0.5), np.maximum, label="scalar")],
    "clamp_max": [Case((rand(3, 4), rand(4)), np.minimum), Case((rand(3, 4), 0.5), np.minimum, label="scalar")],
    "log1p": unary_cases(np.log1p, _within(-0.9, 3)) + [
        Case((np.array([1e-10, -1e-12, 0.0]),), np.log1p, label="tiny", rtol=1e-12, atol=0)],
    "expm1": unary_cases(np.expm1) + [Case((np.array([1e-10, -1e-12, 0.0]),), np.expm1, label="tiny", atol=0)],
    "log2": unary_cases(np.log2, positive),
    "log10": unary_cases(np.log10, positive),
    "exp2": unary_cases(np.exp2),
    "logaddexp": _logaddexp_cases(np.logaddexp),
    "logaddexp2": _logaddexp_cases(np.logaddexp2),
    "xlogy": binary_cases(lambda x, y: x * np.log(y), b=positive) + [
        Case((np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, 0.5])), lambda x, y: np.where(x == 0, 0, x * np.log(y)),
             grad=False, label="zeros")],
    "logit": unary_cases(lambda x: np.log(x / (1 - x)), _within(0.05, 0.95)) + [
        Case((rand(3, 4, lo=0.0, hi=1.0), 0.2), lambda x, e: np.log(np.clip(x, e, 1 - e) / (1 - np.clip(x, e, 1 - e))),
             label="eps", grad=False)],
    "tan": unary_cases(np.tan, _within(-1.2, 1.2)),
    "asin": unary_cases(np.arcsin, _within(-0.9, 0.9)),
    "acos": unary_cases(np.arccos, _within(-0.9, 0.9)),
    "atan": unary_cases(np.arctan),
    "sinh": unary_cases(np.sinh),
    "cosh": unary_cases(np.cosh),
    "asinh": unary_cases(np.arcsinh),
    "acosh": unary_cases(np.arccosh, _within(1.1, 4)),
    "atanh": unary_cases(np.arctanh, _within(-0.9, 0.9)),
    "atan2": binary_cases(np.arctan2, scalar=None) + [
        Case((_ints(3, 4), _ints(4)), np.arctan2, grad=False, label="ints")],
    "hypot": binary_cases(np.hypot, scalar=None),
    "deg2rad": unary_cases(np.deg2rad),
    "rad2deg": unary_cases(np.rad2deg),
    "sinc": unary_cases(np.sinc) + [Case((np.array([0.0, 1.0, -2.5]),), np.sinc, label="zero")],
    "trunc": unary_cases(np.trunc) + [Case((_ints(5),), lambda x: x, grad=False, label="int")],
    "frac": unary_cases(lambda x: x - np.trunc(x)),
    "round": unary_cases(np.rint) + [
        Case((np.array([0.5, 1.5, 2.5, -0.5, -1.5]),), np.rint, grad=False, label="halves to even"),
        Case((rand(3, 4) * 10,), _round_ref, kwargs={"decimals": 2}, grad=False, label="decimals"),
        Case((rand(3, 4) * 1000,), _round_ref, kwargs={"decimals": -2}, grad=False, label="negative decimals"),
        Case((_ints(5),), lambda x: x, grad=False, label="int")],
    "fmod": binary_cases(np.fmod, b=positive) + [
        Case((_ints(3, 4), _nonzero_ints(4)), np.fmod, grad=False, label="ints"),
        Case((rand(3, 4), -1.5), np.fmod, label="negative divisor")],
    "copysign": binary_cases(np.copysign),
    # torch's backward takes 2 ** other in integers for an integer exponent: 0 where it is negative.
    "ldexp": [Case((rand(3, 4), Int(rng.integers(-3, 4, (4,)))), lambda x, e: x * 2.0 ** e, nograd=(1,),
                   torch_grad=False),
              Case((rand(3, 4), rand(3, 4)), lambda x, e: x * 2.0 ** e, label="float exponent")],
    "frexp": [Case((np.array([8.0, 0.3, -5.0, 0.0, 1e-3]),), lambda x: np.frexp(x), grad=False),
              Case((rand(3, 4),), lambda x: np.frexp(x), label="random")],
    "nextafter": [Case((rand(3, 4), rand(4)), np.nextafter, grad=False, rtol=0, atol=0)],
    "lerp": [Case((rand(3, 4), rand(3, 4), rand(3, 4, lo=-1, hi=2)), _lerp_ref),
             Case((rand(3, 4), rand(4), 0.3), _lerp_ref, label="scalar weight"),
             Case((rand(2, 1, 4), rand(3, 1), rand(4)), _lerp_ref, label="broadcast"),
             Case((rand(0, 4), rand(4), 0.7), _lerp_ref, label="empty")],
    "heaviside": [Case((rng.choice([-1.0, 0.0, 2.0], (3, 4)), rand(4)), lambda x, v: np.heaviside(x, v), grad=False)],
    "square": unary_cases(np.square) + [Case((_ints(5),), np.square, grad=False, label="int")],
    "float_power": [Case((positive(3, 4), rand(4)), np.power, rtol=1e-6),
                    Case((_ints(3, 4), 2), lambda a, b: np.power(a.astype(np.float64), b), grad=False, label="ints")],
    "erfc": unary_cases(_vectorized(math.erfc), _within(-6, 6)),
    "erfinv": unary_cases(_vectorized(_erfinv_scalar), _within(-0.999, 0.999)) + [
        Case((np.array([-1.0, 1.0, 0.5, 1.5, 1 - 2.0 ** -24, -1 + 2.0 ** -23]),), _vectorized(_erfinv_scalar),
             grad=False, label="edges")],
    "lgamma": unary_cases(_vectorized(math.lgamma), _within(0.1, 8)) + [
        Case((_off_integers(3, 4),), _vectorized(math.lgamma), label="negative"),
        Case((np.array([1.0, 2.0, 0.0, -1.0, -2.5, 1e5]),),
             _vectorized(lambda v: math.inf if v <= 0 and v == int(v) else math.lgamma(v)), grad=False,
             label="poles and large", rtol=1e-5, atol=1e-5)],
    "digamma": unary_cases(_vectorized(_digamma_scalar), _within(0.1, 8)) + [
        Case((_off_integers(3, 4),), _vectorized(_digamma_scalar), label="negative"),
        Case((np.array([1e-3, 30.0, 1e4, -1.0, 0.0]),), _vectorized(_digamma_scalar), grad=False,
             label="poles and large")],
    "polygamma": [Case((1, positive(3, 4)), _polygamma_ref, nograd=(0,), rtol=1e-5),
                  Case((2, positive(3, 4)), _polygamma_ref, rtol=1e-5, label="order 2"),
                  Case((3, _off_integers(2, 3)), lambda n, x: _polygamma_ref(n, x), rtol=1e-4, label="negative x"),
                  Case((0, positive(3)), lambda n, x: _vectorized(_digamma_scalar)(x), label="order 0")],
    "polygamma.method": [Case((positive(3, 4), 1), lambda x, n: _polygamma_ref(n, x), rtol=1e-5,
                              torch=lambda torch, x, n: x.polygamma(n))],
}
