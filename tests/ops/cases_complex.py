"""Reference cases on complex tensors: the complex ops, and the general ops PyTorch defines on complex
numbers (their cases join the op's own list in cases.CASES)."""

from __future__ import annotations

import numpy as np

from .cases import Case, Complex

rng = np.random.default_rng(1618)


def crand(*shape):
    return Complex(rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape))


def rand(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def positive(*shape):
    return rng.uniform(0.2, 3.0, shape)


def _sgn(z):
    magnitude = np.abs(z)
    return np.where(magnitude == 0, 0, z / np.where(magnitude == 0, 1, magnitude))


def _complex_unary(ref, **options):
    return [Case((crand(3, 4),), ref, label="complex", **options),
            Case((Complex(np.ascontiguousarray(crand(4, 3).array).T),), ref, label="complex strided", **options)]


def _complex_binary(ref):
    return [Case((crand(3, 4), crand(4)), ref, label="complex broadcast"),
            Case((crand(3, 4), rand(3, 4)), ref, label="complex with real"),
            Case((crand(2, 3), 1.5 - 2j), ref, label="complex scalar"),
            Case((rand(2, 3), 0.5j), ref, label="real tensor, complex scalar")]


CASES: dict[str, list[Case]] = {
    "real": [Case((crand(3, 4),), np.real), Case((rand(3, 4),), np.real, label="real input")],
    "imag": [Case((crand(3, 4),), np.imag)],
    "view_as_real": [Case((crand(3, 2),), lambda z: np.stack([z.real, z.imag], -1))],
    "view_as_complex": [Case((rand(3, 2),), lambda x: x[..., 0] + 1j * x[..., 1])],
    "complex": [Case((rand(3, 1), rand(4)), lambda a, b: a + 1j * b)],
    "polar": [Case((positive(3, 4), rand(3, 4)), lambda r, t: r * np.exp(1j * t))],
    "angle": [Case((crand(3, 4),), np.angle), Case((np.array([-1.5, 0.0, 2.0]),), np.angle, label="real", grad=False)],
    "sgn": [Case((crand(3, 4),), _sgn), Case((rand(3, 4),), np.sign, label="real")],
    "conj": [Case((crand(3, 4),), np.conj, torch=lambda torch, z: torch.conj(z).resolve_conj()),
             Case((rand(3),), np.conj, label="real")],
    "conj_physical": [Case((crand(3, 4),), np.conj)],
}

# The general ops on complex tensors.
GENERAL: dict[str, list[Case]] = {
    "add": _complex_binary(np.add),
    "sub": _complex_binary(np.subtract),
    "mul": _complex_binary(np.multiply),
    "div": _complex_binary(np.divide),
    "neg": _complex_unary(np.negative),
    "exp": _complex_unary(np.exp),
    "log": _complex_unary(np.log),
    "sqrt": _complex_unary(np.sqrt),
    "sin": _complex_unary(np.sin),
    "cos": _complex_unary(np.cos),
    "tanh": _complex_unary(np.tanh),
    "sigmoid": _complex_unary(lambda z: 1 / (1 + np.exp(-z))),
    "reciprocal": _complex_unary(np.reciprocal),
    "abs": _complex_unary(np.abs),
    "pow": [Case((crand(3, 4), 2.0), np.power, label="complex"), Case((crand(3), 0.5 + 1j), np.power,
                                                                        label="complex exponent", grad=False)],
    "sum": [Case((crand(3, 4), 1), lambda z, d: z.sum(d), label="complex")],
    "mean": [Case((crand(3, 4),), np.mean, label="complex")],
    "matmul": [Case((crand(3, 4), crand(4, 2)), np.matmul, label="complex")],
    "mm": [Case((crand(3, 4), crand(4, 2)), np.matmul, label="complex")],
    "reshape": [Case((crand(3, 4), [2, 6]), lambda z, s: z.reshape(s), label="complex")],
    "cat": [Case(([crand(2, 3), crand(1, 3)],), np.concatenate, label="complex")],
    "dot": [Case((crand(4), crand(4)), np.dot, label="complex")],
    "vdot": [Case((crand(4), crand(4)), np.vdot, label="complex")],
    "linalg_vecdot": [Case((crand(3, 4), crand(4)), lambda x, y: (np.conj(x) * y).sum(-1), label="complex",
                           torch=lambda torch, x, y: torch.linalg.vecdot(x, y))],
    "linalg_vector_norm": [Case((crand(3, 4),), lambda z: np.sqrt((np.abs(z) ** 2).sum()), label="complex",
                                torch=lambda torch, z: torch.linalg.vector_norm(z))],
    "to.dtype": [Case((crand(3), "complex128"), lambda z, d: z, label="complex to complex128",
                      torch=lambda torch, t, d: t.to(d)),
                 Case((rand(3), "complex128"), lambda z, d: z + 0j, label="real to complex",
                      torch=lambda torch, t, d: t.to(d))],
}
