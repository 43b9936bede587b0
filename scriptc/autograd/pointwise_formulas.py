"""Differentiable gradient formulas of elementwise math ops (trigonometric, hyperbolic, error and gamma
functions, logs and exponentials in other bases, binary ops such as atan2 and lerp), for create_graph
and forward AD. They join formulas.FORMULAS; `c` and `g` are as there."""

from __future__ import annotations

import math

from scriptc.autograd.formulas import _is_tensor, _through_composite, _where, table_op

_TWO_OVER_ROOT_PI = 2 / math.sqrt(math.pi)


def _slope(derivative):
    """The formula g * derivative(x, out) of a one-argument op (extra arguments get no gradient)."""
    def formula(c, g):
        return (g * derivative(c.self, c.out),) + (None,) * (len(c.node.ctx.op.schema.args) - 1)
    return formula


def _logit(c, g):
    x = c.self
    slope = g / (x * (1 - x))
    if c.eps is not None:  # torch's logit clamps to [eps, 1 - eps], so no gradient outside it
        slope = _where((x < c.eps) | (x > 1 - c.eps), 0.0, slope)
    return (slope, None)


def _two_sided(derivatives):
    """The formula of a binary op (self, other), either possibly a Python number: derivatives(a, b, out, g)
    gives (d self, d other)."""
    def formula(c, g):
        a, b = c.self, c.other
        ga, gb = derivatives(a, b, c.out, g)
        return (ga if _is_tensor(a) else None, gb if _is_tensor(b) else None)
    return formula


def _xlogy(a, b, out, g):
    nonzero = (a != 0) if _is_tensor(a) else float(a != 0)
    return g * table_op("xlogy", nonzero * 1.0, b), g * a / b


def _lerp(c, g):
    start, end, weight = c.self, c.end, c.weight
    return (g * (1 - weight), g * weight, g * (end - start) if _is_tensor(weight) else None)


def _addcmul(c, g):
    return (g, g * c.value * c.tensor2, g * c.value * c.tensor1, None)


def _addcdiv(c, g):
    return (g, g * c.value / c.tensor2, -g * c.value * c.tensor1 / (c.tensor2 * c.tensor2), None)


def _selu(c, g):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _through_composite(c, g, ("self",), lambda x: scale * _where(x > 0, x, alpha * (x.exp() - 1)))


def _celu(c, g):
    alpha = c.alpha
    return _through_composite(c, g, ("self",), lambda x: _where(x > 0, x, alpha * ((x / alpha).exp() - 1)))


POINTWISE_FORMULAS = {
    "erf": _slope(lambda x, y: _TWO_OVER_ROOT_PI * (-x * x).exp()),
    "erfc": _slope(lambda x, y: -_TWO_OVER_ROOT_PI * (-x * x).exp()),
    "erfinv": _slope(lambda x, y: (math.sqrt(math.pi) / 2) * (y * y).exp()),
    "special_ndtr": _slope(lambda x, y: (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))),
    "log2": _slope(lambda x, y: 1 / (x * math.log(2))),
    "log10": _slope(lambda x, y: 1 / (x * math.log(10))),
    "exp2": _slope(lambda x, y: y * math.log(2)),
    "tan": _slope(lambda x, y: 1 + y * y),
    "asin": _slope(lambda x, y: (1 - x * x).rsqrt()),
    "acos": _slope(lambda x, y: -(1 - x * x).rsqrt()),
    "atan": _slope(lambda x, y: 1 / (1 + x * x)),
    "sinh": _slope(lambda x, y: x.cosh()),
    "cosh": _slope(lambda x, y: x.sinh()),
    "asinh": _slope(lambda x, y: (x * x + 1).rsqrt()),
    "acosh": _slope(lambda x, y: (x * x - 1).rsqrt()),
    "atanh": _slope(lambda x, y: 1 / (1 - x * x)),
    "tanhshrink": _slope(lambda x, y: x.tanh() * x.tanh()),
    "lgamma": _slope(lambda x, y: x.digamma()),
    "digamma": _slope(lambda x, y: table_op("polygamma", 1, x)),
    "logit": _logit,
    "selu": _selu, "celu": _celu,
    "atan2": _two_sided(lambda a, b, out, g: (g * b / (a * a + b * b), -g * a / (a * a + b * b))),
    "hypot": _two_sided(lambda a, b, out, g: (g * a / out, g * b / out)),
    "logaddexp": _two_sided(lambda a, b, out, g: (g * (a - out).exp(), g * (b - out).exp())),
    "logaddexp2": _two_sided(lambda a, b, out, g: (g * ((a - out) * math.log(2)).exp(),
                                                   g * ((b - out) * math.log(2)).exp())),
    "xlogy": _two_sided(_xlogy),
    "lerp": _lerp, "addcmul": _addcmul, "addcdiv": _addcdiv,
}
