"""Cases for bitwise ops, floating-point predicates and closeness tests (see cases.py for the format)."""

from __future__ import annotations

import numpy as np

from .cases import Bool, Case, Int, rand, rng


def _ints(*shape, lo=-8, hi=8):
    return Int(rng.integers(lo, hi, shape))


def _specials(*shape):
    """Floats with NaNs, infinities and signed zeros mixed in."""
    values = rand(*shape)
    flat = values.reshape(-1)
    picks = rng.choice(flat.size, size=min(flat.size, 6), replace=False)
    flat[picks] = [np.nan, np.inf, -np.inf, 0.0, -0.0, np.nan][:len(picks)]
    return values


def _bitwise_cases(ref):
    return [Case((_ints(3, 4), _ints(4)), ref, grad=False, label="broadcast"),
            Case((_ints(3, 4), 5), ref, grad=False, label="python int"),
            Case((Bool(rand(3, 4) > 0), Bool(rand(3, 4) > 0)), ref, grad=False, label="bool"),
            Case((_ints(0, 4), _ints(4)), ref, grad=False, label="empty")]


def _shift(left):
    def ref(a, b):
        a, b = np.asarray(a), np.asarray(b)
        dtype = np.result_type(a, b) if isinstance(b, np.ndarray) and b.ndim else a.dtype
        bits = dtype.itemsize * 8
        outside = (b < 0) | (b >= bits)
        count = np.where(outside, 0, b)
        if left:
            return np.where(outside, 0, np.left_shift(a, count)).astype(dtype)
        return np.where(outside, np.right_shift(a, bits - 1), np.right_shift(a, count)).astype(dtype)
    return ref


def _shift_cases(left):
    ref = _shift(left)
    return [Case((_ints(3, 4, lo=-100, hi=100), _ints(4, lo=0, hi=8)), ref, grad=False, label="broadcast"),
            Case((_ints(5, lo=-100, hi=100), Int(np.array([0, 1, 63, 64, -1]))), ref, grad=False,
                 label="out of range counts"),
            Case((_ints(3, lo=-100, hi=100), 3), ref, grad=False, label="python int")]


def _isclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _predicate_cases(ref):
    return [Case((_specials(3, 4),), ref, grad=False, label="specials"),
            Case((np.ascontiguousarray(_specials(4, 3)).T,), ref, grad=False, label="transposed"),
            Case((rand(0, 2),), ref, grad=False, label="empty"),
            Case((_ints(5),), ref, grad=False, label="int")]


def _close_pair(*shape):
    a = rand(*shape)
    b = a + rng.choice([0.0, 1e-9, 1e-3], size=shape)
    return a, b


CASES = {
    "bitwise_and": _bitwise_cases(lambda a, b: np.bitwise_and(a, b)),
    "gcd": [Case((_ints(3, 4), _ints(4)), np.gcd, grad=False, label="broadcast"),
            Case((Int(np.array([0, 0, -12, 7])), Int(np.array([0, 5, 18, -21]))), np.gcd, grad=False, label="signs")],
    "lcm": [Case((_ints(3, 4), _ints(4)), np.lcm, grad=False, label="broadcast"),
            Case((Int(np.array([0, 4, -6])), Int(np.array([3, 0, 4]))), np.lcm, grad=False, label="zero")],
    "bitwise_or": _bitwise_cases(lambda a, b: np.bitwise_or(a, b)),
    "bitwise_xor": _bitwise_cases(lambda a, b: np.bitwise_xor(a, b)),
    "bitwise_not": [Case((_ints(3, 4),), np.invert, grad=False),
                    Case((Bool(rand(3, 4) > 0),), np.logical_not, grad=False, label="bool")],
    "bitwise_left_shift": _shift_cases(True),
    "bitwise_right_shift": _shift_cases(False),
    "isnan": _predicate_cases(np.isnan),
    "isinf": _predicate_cases(np.isinf),
    "isposinf": _predicate_cases(np.isposinf),
    "isneginf": _predicate_cases(np.isneginf),
    "isfinite": _predicate_cases(np.isfinite),
    "signbit": _predicate_cases(np.signbit),
    "nan_to_num": [Case((_specials(3, 4),), lambda x: np.nan_to_num(x, posinf=np.finfo(np.float32).max,
                                                                     neginf=np.finfo(np.float32).min), grad=False,
                        rtol=0, atol=0),
                   Case((_specials(3, 4), 1.5, 2.0, -3.0), lambda x, n, p, m: np.nan_to_num(x, nan=n, posinf=p, neginf=m),
                        grad=False, label="replacements"),
                   Case((rand(3, 4),), lambda x: x, label="finite (gradient)")],
    "isclose": [Case(_close_pair(3, 4), _isclose_ref, grad=False),
                Case((*_close_pair(3, 4), 1e-2, 0.0), _isclose_ref, grad=False, label="rtol only"),
                Case((_specials(3, 4), _specials(3, 4), 1e-5, 1e-8, True), _isclose_ref, grad=False, label="equal_nan"),
                Case((rand(2, 1, 4), rand(3, 1)), _isclose_ref, grad=False, label="broadcast"),
                Case((_ints(3, 4), _ints(3, 4), 0.5, 1.0), _isclose_ref, grad=False, label="int")],
    "allclose": [Case(_close_pair(3, 4), lambda a, b: np.allclose(a, b), grad=False),
                 Case((rand(3, 4), rand(3, 4)), lambda a, b: np.allclose(a, b), grad=False, label="far")],
    "equal": [Case((Int(np.arange(6).reshape(2, 3)), Int(np.arange(6).reshape(2, 3))), lambda a, b: True, grad=False),
              Case((Int(np.arange(6).reshape(2, 3)), Int(np.arange(6))), lambda a, b: False, grad=False,
                   label="shapes differ")],
}
