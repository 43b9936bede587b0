"""Vectorizable exp, log, tanh, erf in LLVM IR (straight-line code with selects, no calls).

Error bounds, tested against numpy float64 in tests/codegen/test_llvm.py. Polynomials use FMA
(`contract`), which only tightens them:
  exp   <= 2 ulp (float32), <= 2 ulp (float64) for results in the normal range; overflow -> inf, underflow -> 0
  log   <= 3 ulp for normal positive inputs; 0 -> -inf, negative -> nan, inf -> inf
  tanh  <= 6 ulp (float32: one rational function), <= 3 ulp (float64); saturates to +-1
  erf   <= 1e-6 absolute (float32), <= 1e-13 absolute (float64)
"""

from __future__ import annotations

import math

from llvmlite import ir

F32, F64 = ir.FloatType(), ir.DoubleType()
I32, I64 = ir.IntType(32), ir.IntType(64)


def _c(t, v):
    return ir.Constant(t, v)


def _info(t):
    if t == F32:
        return dict(int=I32, mant=23, bias=127, exp_lo=-87.3, exp_hi=88.7, exp_terms=8, log_terms=5,
                    tanh_big=9.0, tanh_terms=5, erf_series=24, erf_fraction=14)
    return dict(int=I64, mant=52, bias=1023, exp_lo=-708.3, exp_hi=709.7, exp_terms=14, log_terms=11,
                tanh_big=19.5, tanh_terms=10, erf_series=44, erf_fraction=60)


# The one fast-math flag kernels use: a*b+c may become an FMA.
CONTRACT = ("contract",)


def _poly(b: ir.IRBuilder, x, coefficients):
    """Horner: c0 + x*(c1 + x*(c2 + ...)), one FMA per term."""
    t = x.type
    acc = _c(t, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = b.fadd(b.fmul(acc, x, flags=CONTRACT), _c(t, c), flags=CONTRACT)
    return acc


def _intrinsic(b: ir.IRBuilder, name: str, *args):
    t = args[0].type
    fn = b.module.declare_intrinsic(name, [t])
    return b.call(fn, list(args))


def exp(b: ir.IRBuilder, x, nonpositive: bool = False):
    """e**x; `nonpositive` promises x <= 0 or NaN (softmax's x - max), which drops the overflow path."""
    t = x.type
    info = _info(t)
    it = info["int"]
    clamped = b.select(b.fcmp_ordered("<", x, _c(t, info["exp_lo"])), _c(t, info["exp_lo"]), x)
    if not nonpositive:
        clamped = b.select(b.fcmp_ordered(">", clamped, _c(t, info["exp_hi"])), _c(t, info["exp_hi"]), clamped)
    n = _intrinsic(b, "llvm.rint", b.fmul(clamped, _c(t, 1.4426950408889634)))
    # Cody-Waite: r = x - n*ln2 with ln2 split so n*ln2_hi is exact.
    hi, lo = (0.693145751953125, 1.428606765330187e-06) if t == F32 else (0.6931471803691238, 1.9082149292705877e-10)
    r = b.fsub(b.fsub(clamped, b.fmul(n, _c(t, hi))), b.fmul(n, _c(t, lo)))
    p = _poly(b, r, [1.0 / math.factorial(k) for k in range(info["exp_terms"])])
    scale_bits = b.shl(b.add(b.fptosi(n, it), _c(it, info["bias"])), _c(it, info["mant"]))
    result = b.fmul(p, b.bitcast(scale_bits, t))
    if not nonpositive:
        result = b.select(b.fcmp_ordered(">", x, _c(t, info["exp_hi"])), _c(t, math.inf), result)
    result = b.select(b.fcmp_ordered("<", x, _c(t, info["exp_lo"])), _c(t, 0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def log(b: ir.IRBuilder, x):
    t = x.type
    info = _info(t)
    it = info["int"]
    bits = b.bitcast(x, it)
    e = b.sub(b.lshr(bits, _c(it, info["mant"])), _c(it, info["bias"]))
    mant_mask = (1 << info["mant"]) - 1
    m = b.bitcast(b.or_(b.and_(bits, _c(it, mant_mask)), _c(it, info["bias"] << info["mant"])), t)
    big = b.fcmp_ordered(">", m, _c(t, math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, _c(t, 0.5)), m)
    e = b.select(big, b.add(e, _c(it, 1)), e)
    s = b.fdiv(b.fsub(m, _c(t, 1.0)), b.fadd(m, _c(t, 1.0)))
    s2 = b.fmul(s, s)
    series = b.fmul(s, _poly(b, s2, [2.0 / (2 * k + 1) for k in range(info["log_terms"])]))
    result = b.fadd(b.fmul(b.sitofp(e, t), _c(t, math.log(2.0))), series)
    result = b.select(b.fcmp_ordered("==", x, _c(t, 0.0)), _c(t, -math.inf), result)
    result = b.select(b.fcmp_ordered("<", x, _c(t, 0.0)), _c(t, math.nan), result)
    result = b.select(b.fcmp_ordered("==", x, _c(t, math.inf)), x, result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


# float32 tanh as one rational function x*P(x^2)/Q(x^2) on [-7.905, 7.905] (Eigen's coefficients),
# saturating beyond: a single division, so it vectorizes into a few FMAs per lane. The clamp keeps
# NaN (an ordered compare is false for it) and tiny |x| come out within 1 ulp of x, so neither needs
# a select of its own: the kernel is compute-bound and each vector op counts.
_TANH_P = [4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
           -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16]
_TANH_Q = [4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06]
# Clamped at 9 (Eigen: 7.905): the rational stays within 1 ulp up to 9, where it rounds to exactly 1
# (with or without FMA), so tanh(+-inf) is +-1.
_TANH_CLAMP = 9.0


def _tanh_f32(b: ir.IRBuilder, x):
    t = x.type
    c = b.select(b.fcmp_ordered(">", x, _c(t, _TANH_CLAMP)), _c(t, _TANH_CLAMP), x)
    c = b.select(b.fcmp_ordered("<", c, _c(t, -_TANH_CLAMP)), _c(t, -_TANH_CLAMP), c)
    x2 = b.fmul(c, c)
    p = b.fmul(c, _poly(b, x2, _TANH_P))
    q = _poly(b, x2, _TANH_Q)
    # q is in [0.0049, 1.2] on the clamped range: a reciprocal estimate refined once is as good here
    # as the division (measured max error 5.46 ulp either way) and ~8% faster on the GELU chain.
    return b.fdiv(p, q, flags=("arcp", "ninf"))


def tanh(b: ir.IRBuilder, x):
    t = x.type
    if t == F32:
        return _tanh_f32(b, x)
    info = _info(t)
    a = _intrinsic(b, "llvm.fabs", x)
    # Small |x|: sinh/cosh series (factorials make them converge fast); large: 1 - 2/(e^2a + 1).
    a2 = b.fmul(a, a)
    n = info["tanh_terms"]
    sinh = b.fmul(a, _poly(b, a2, [1.0 / math.factorial(2 * k + 1) for k in range(n)]))
    cosh = _poly(b, a2, [1.0 / math.factorial(2 * k) for k in range(n)])
    small = b.fdiv(sinh, cosh)
    capped = b.select(b.fcmp_ordered(">", a, _c(t, info["tanh_big"])), _c(t, info["tanh_big"]), a)
    e2 = exp(b, b.fmul(capped, _c(t, 2.0)))
    large = b.fsub(_c(t, 1.0), b.fdiv(_c(t, 2.0), b.fadd(e2, _c(t, 1.0))))
    result = b.select(b.fcmp_ordered("<", a, _c(t, 0.625)), small, large)
    result = b.select(b.fcmp_ordered(">", a, _c(t, info["tanh_big"])), _c(t, 1.0), result)
    signed = b.select(b.fcmp_ordered("<", x, _c(t, 0.0)), b.fsub(_c(t, -0.0), result), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, signed)


def erf(b: ir.IRBuilder, x):
    t = x.type
    info = _info(t)
    a = _intrinsic(b, "llvm.fabs", x)
    near = b.select(b.fcmp_ordered(">", a, _c(t, 2.0)), _c(t, 2.0), a)
    square = b.fmul(near, near)
    # Taylor: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), evaluated by Horner in x^2.
    coefficients = [(-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(info["erf_series"])]
    series = b.fmul(b.fmul(near, _poly(b, square, coefficients)), _c(t, 2.0 / math.sqrt(math.pi)))
    far = b.select(b.fcmp_ordered("<", a, _c(t, 2.0)), _c(t, 2.0), a)
    far = b.select(b.fcmp_ordered(">", far, _c(t, 30.0)), _c(t, 30.0), far)
    fraction = far
    for k in range(info["erf_fraction"], 0, -1):
        fraction = b.fadd(far, b.fdiv(_c(t, k / 2.0), fraction))
    tail = b.fdiv(exp(b, b.fsub(_c(t, -0.0), b.fmul(far, far))), b.fmul(fraction, _c(t, math.sqrt(math.pi))))
    value = b.select(b.fcmp_ordered("<", a, _c(t, 2.0)), series, b.fsub(_c(t, 1.0), tail))
    signed = b.select(b.fcmp_ordered("<", x, _c(t, 0.0)), b.fsub(_c(t, -0.0), value), value)
    return b.select(b.fcmp_unordered("uno", x, x), x, signed)


def libm_call(b: ir.IRBuilder, name: str, args):
    """A call to the C math library's `name` (`namef` for float32): the primitives in expr.LIBM."""
    t = args[0].type
    symbol = name + ("f" if t == F32 else "")
    fn = b.module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(t, [t] * len(args)), name=symbol)
    return b.call(fn, list(args))
