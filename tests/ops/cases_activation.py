"""Reference cases for the activation ops (scriptc/ops/activation.py); merged into CASES by cases.py."""

from __future__ import annotations

import numpy as np

from .cases import Case, rand, unary_cases

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _F(name):
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _prelu(x, w):
    shaped = w.reshape((1, -1) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and w.size > 1 else w.reshape(())
    return np.where(x > 0, x, shaped * x)


def _glu(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * _sigmoid(b)


def _softmin(x, dim):
    e = np.exp(-x - (-x).max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _away_from(points, *shape, margin=0.05):
    """Random values at least `margin` from each of `points` (kinks where finite differences fail)."""
    x = rand(*shape, lo=-4.0, hi=4.0)
    for p in points:
        x = np.where(np.abs(x - p) < margin, p + 2 * margin, x)
    return x


CASES: dict[str, list[Case]] = {
    "elu": unary_cases(_elu) + [Case((rand(3, 4), 0.5), _elu, label="alpha", torch=_F("elu"))],
    "selu": unary_cases(lambda x: SELU_SCALE * _elu(x, SELU_ALPHA), ),
    "celu": unary_cases(lambda x: np.maximum(x, 0) + np.minimum(0, np.expm1(x))) + [
        Case((rand(3, 4), 2.0), lambda x, a: np.maximum(x, 0) + np.minimum(0, a * np.expm1(x / a)), label="alpha",
             torch=_F("celu"))],
    "hardtanh": [Case((_away_from([-1, 1], 3, 4),), lambda x: np.clip(x, -1, 1), torch=_F("hardtanh")),
                 Case((_away_from([-0.5, 2], 3, 4), -0.5, 2.0), lambda x, lo, hi: np.clip(x, lo, hi),
                      label="bounds", torch=_F("hardtanh"))],
    "relu6": [Case((_away_from([0, 6], 3, 4) * 2,), lambda x: np.clip(x, 0, 6), torch=_F("relu6"))],
    "hardsigmoid": [Case((_away_from([-3, 3], 3, 5),), lambda x: np.clip(x / 6 + 0.5, 0, 1),
                         torch=_F("hardsigmoid"))],
    "hardswish": [Case((_away_from([-3, 3], 3, 5),), lambda x: x * np.clip(x + 3, 0, 6) / 6,
                       torch=_F("hardswish"))],
    "mish": unary_cases(lambda x: x * np.tanh(np.log1p(np.exp(x)))) + [
        Case((np.array([-60.0, -20.0, 0.0, 20.0, 60.0]),), lambda x: x * np.tanh(np.logaddexp(0, x)),
             label="extremes")],
    "softplus": [Case((rand(3, 4),), _softplus, torch=_F("softplus")),
                 Case((rand(3, 4) * 4, 2.0, 3.0), _softplus, label="beta threshold", torch=_F("softplus")),
                 Case((np.array([-100.0, -30.0, 0.0, 30.0, 100.0]),), _softplus, label="extremes",
                      torch=_F("softplus"))],
    "softsign": [Case((rand(3, 4),), lambda x: x / (1 + np.abs(x)), torch=_F("softsign"))],
    "softshrink": [Case((_away_from([-0.5, 0.5], 3, 4),), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0),
                        torch=_F("softshrink")),
                   Case((_away_from([-1, 1], 3, 4), 1.0), lambda x, lam: np.sign(x) * np.maximum(np.abs(x) - lam, 0),
                        label="lambd", torch=_F("softshrink"))],
    "hardshrink": [Case((_away_from([-0.5, 0.5], 3, 4),), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
                   Case((_away_from([-1, 1], 3, 4), 1.0), lambda x, lam: np.where(np.abs(x) > lam, x, 0),
                        label="lambd")],
    "tanhshrink": [Case((rand(3, 4),), lambda x: x - np.tanh(x), torch=_F("tanhshrink"))],
    "logsigmoid": [Case((rand(3, 4),), lambda x: -np.logaddexp(0, -x), torch=_F("logsigmoid")),
                   Case((np.array([-100.0, -30.0, 0.0, 30.0, 100.0]),), lambda x: -np.logaddexp(0, -x),
                        label="extremes", torch=_F("logsigmoid"))],
    "threshold": [Case((_away_from([0.1], 3, 4), 0.1, 2.0), lambda x, t, v: np.where(x > t, x, v),
                       torch=_F("threshold"))],
    "prelu": [Case((rand(2, 3, 4), rand(3)), _prelu, torch=_F("prelu")),
              Case((rand(2, 3, 2, 2), rand(1)), _prelu, label="shared", torch=_F("prelu")),
              Case((rand(5), rand(1)), _prelu, label="1-d", torch=_F("prelu"))],
    "glu": [Case((rand(3, 4),), _glu, torch=_F("glu")),
            Case((rand(4, 3, 2), 0), _glu, label="dim 0", torch=_F("glu"))],
    "softmin": [Case((rand(3, 4), 1), _softmin, torch=_F("softmin")),
                Case((rand(2, 3, 4), 0), _softmin, label="dim 0", torch=_F("softmin"))],
    "rrelu": [Case((rand(3, 4),), lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2), label="eval",
                   torch=_F("rrelu")),
              Case((rand(3, 4), 0.2, 0.4, False), lambda x, lo, hi, t: np.where(x >= 0, x, x * 0.3),
                   label="eval bounds", torch=_F("rrelu"))],
}
