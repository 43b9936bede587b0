"""Special functions numpy lacks, and array-module helpers, written against an array module `xp`."""

from __future__ import annotations

import contextlib
import math

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SERIES_TERMS = 40       # Taylor series for |x| < 2: the last term is below 1e-23
_FRACTION_TERMS = 60     # Laplace continued fraction of erfc for |x| >= 2


def erf(xp, x):
    """erf to about 1e-13 absolute in float64 (Taylor series near 0, erfc's continued fraction beyond).

    Computed in float64 and returned in x's dtype.
    """
    dtype = x.dtype
    a = xp.abs(x.astype(xp.float64))
    near = xp.minimum(a, 2.0)
    square = near * near
    term = near.copy()
    total = near.copy()
    for n in range(1, _SERIES_TERMS):
        term = term * (-square) / n
        total = total + term / (2 * n + 1)
    series = _TWO_OVER_SQRT_PI * total

    far = xp.maximum(a, 2.0)
    fraction = far.copy()
    for k in range(_FRACTION_TERMS, 0, -1):
        fraction = far + (k / 2.0) / fraction
    erfc_far = xp.exp(-far * far) / (math.sqrt(math.pi) * fraction)
    result = xp.where(a < 2.0, series, 1.0 - erfc_far)
    return (xp.sign(x) * result).astype(dtype, copy=False)


def quiet_float_errors(xp):
    """numpy's errstate(divide, invalid) set to ignore; cupy never warns about floating-point errors
    (it has no errstate), so there it does nothing."""
    if hasattr(xp, "errstate"):
        return xp.errstate(divide="ignore", invalid="ignore")
    return contextlib.nullcontext()


def digamma(xp, x):
    """The digamma function psi(x) = d/dx log Gamma(x) for x > 0, in float64: the recurrence
    psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series."""
    x = x.astype(xp.float64)
    shift = xp.zeros_like(x)
    for _ in range(10):
        small = x < 10
        shift = shift - xp.where(small, 1.0 / xp.where(small, x, 1.0), 0.0)
        x = xp.where(small, x + 1, x)
    z = 1.0 / (x * x)
    # Bernoulli-number coefficients of the asymptotic expansion, highest order first
    series = 0.0
    for c in (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
              -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2):
        series = series * z + c
    return shift + xp.log(x) - 0.5 / x - z * series


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
