"""Test cases for every op in the table: inputs, a float64 numpy reference, and how torch spells it.

`CASES[op_name]` is a list of Case. Arguments are numpy arrays (made into
tensors by the tests, as float32 for the forward check and float64 for
gradcheck), Python values, or `Int(array)` / `Bool(array)` for arrays that
keep an integer or bool dtype, `Complex(array)` for complex ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

rng = np.random.default_rng(1234)


@dataclass
class Int:
    """An integer array: int32 and int8 arrays keep their dtype, others become int64."""
    array: np.ndarray


@dataclass
class Bool:
    array: np.ndarray


@dataclass
class Complex:
    """A complex array: complex64 where floats are float32, complex128 in gradcheck."""
    array: np.ndarray


@dataclass
class Quantized:
    """A quantized tensor argument: `array` quantized per tensor to dtype (a name: "qint8", "quint8",
    "qint32"); references receive this marker and read its integers or values."""
    array: np.ndarray
    scale: float
    zero_point: int
    dtype: str

    def integers(self) -> np.ndarray:
        low, high = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}[self.dtype]
        scaled = self.array.astype(np.float32) * np.float32(1 / np.float32(self.scale))
        return np.clip(np.rint(scaled) + self.zero_point, low, high).astype(np.int64)

    def values(self) -> np.ndarray:
        return (self.integers() - self.zero_point) * self.scale


@dataclass
class Case:
    args: tuple
    ref: Callable | None            # numpy float64 reference over the same args
    grad: bool = True               # gradcheck this case
    kwargs: dict = field(default_factory=dict)
    torch: Callable | None = None   # torch spelling: fn(torch, *args, **kwargs); None = by name
    rtol: float = 2e-5
    atol: float = 2e-5
    label: str = ""
    nograd: tuple = ()              # positions of float arrays that are not differentiable inputs
    torch_grad: bool = True         # compare gradients with torch's (False where torch's differ by design)
    pre: Callable | None = None     # args -> args, with either library's tensors, before the op in gradcheck
    #                                 and the torch comparison (symmetrize what an op reads half of)
    post: Callable | None = None    # outputs -> outputs before comparing (a decomposition's sign-free parts)


def rand(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


def positive(*shape):
    return rng.uniform(0.2, 3.0, shape)


def noncontig(*shape):
    """A transposed (non-contiguous) array of the given shape."""
    return np.ascontiguousarray(rand(*reversed(shape))).T


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def unary_cases(ref, domain=rand, grad=True):
    return [Case((domain(3, 4),), ref, grad, label="3x4"),
            Case((np.ascontiguousarray(domain(4, 3)).T,), ref, grad, label="transposed"),
            Case((domain(0, 3),), ref, grad, label="empty"),
            Case((domain(),), ref, grad, label="0-d")]


def binary_cases(ref, a=rand, b=rand, grad=True, scalar=1.5):
    cases = [Case((a(3, 4), b(3, 4)), ref, grad, label="same"),
             Case((a(3, 4), b(4)), ref, grad, label="broadcast row"),
             Case((a(2, 1, 4), b(3, 1)), ref, grad, label="broadcast both"),
             Case((np.ascontiguousarray(a(4, 3)).T, b(3, 4)), ref, grad, label="transposed"),
             Case((a(0, 4), b(4)), ref, grad, label="empty"),
             Case((a(), b(3)), ref, grad, label="0-d")]
    if scalar is not None:
        cases.append(Case((a(3, 4), scalar), ref, grad, label="python scalar"))
    return cases


def reduction_cases(ref, name, keep_int_dim=False, grad=True, domain=rand):
    x = domain(3, 4, 5)
    cases = [Case((x,), lambda a: ref(a, None, False), grad, label="all"),
             Case((x, 1), lambda a, d: ref(a, d, False), grad, label="dim 1"),
             Case((x, -1), lambda a, d, keepdim: ref(a, d, keepdim), grad, kwargs={"keepdim": True},
                  label="keepdim"),
             Case((np.ascontiguousarray(domain(5, 4)).T, 0), lambda a, d: ref(a, d, False), grad, label="transposed")]
    if not keep_int_dim:
        cases.append(Case((x, [0, 2]), lambda a, d: ref(a, tuple(d), False), grad, label="dims list"))
    return cases


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """A direct loop over output positions (independent of the im2col kernel)."""
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh, j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def _pool_ref(x, k, s, p, reducer, pad_value, include_pad=True):
    s = k if s is None else s
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=pad_value)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            if reducer == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif include_pad:
                out[:, :, i, j] = win.mean(axis=(2, 3))
            else:
                rows = [r for r in range(i * s, i * s + k) if p <= r < p + h]
                cols = [q for q in range(j * s, j * s + k) if p <= q < p + w]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (len(rows) * len(cols))
    return out


def _adaptive_ref(x, size):
    oh, ow = size
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = (i * h) // oh, -(-((i + 1) * h) // oh)
            ws, we = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = x[..., hs:he, ws:we].mean(axis=(-1, -2))
    return out


def _layer_norm_ref(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    out = (x - mu) / np.sqrt(var + eps)
    return out * (1 if w is None else w) + (0 if b is None else b)


def _batch_norm_eval_ref(x, rm, rv, w=None, b=None, training=False, momentum=0.1, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        rm, rv = x.mean(axis=axes), x.var(axis=axes)
    out = (x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + eps)
    return out * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def _log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def _F(name):
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


def _method(name):
    return lambda torch, t, *a, **k: getattr(t, name)(*a, **k)


def _index_ref(x, indices):
    return x[tuple(slice(None) if i is None else i for i in indices)]


def _torch_index(torch, x, indices):
    return x[tuple(slice(None) if i is None else i for i in indices)]


def _torch_index_put(torch, x, indices, values, accumulate=False):
    return x.index_put(tuple(i for i in indices), values, accumulate)


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    key = tuple(slice(None) if i is None else i for i in indices)
    if accumulate:
        np.add.at(out, key, values)
    else:
        out[key] = values
    return out


def _gather_ref(x, dim, index):
    return np.take_along_axis(x, index, axis=dim)


def _unique_index(n, k):
    return Int(rng.permutation(n)[:k])


CASES: dict[str, list[Case]] = {
    "add": binary_cases(lambda a, b: a + b) + [
        Case((rand(3, 4), rand(4)), lambda a, b, alpha: a + alpha * b, kwargs={"alpha": 2}, label="alpha")],
    "sub": binary_cases(lambda a, b: a - b) + [Case((2.5, rand(3)), lambda a, b: a - b, label="reflected")],
    "mul": binary_cases(lambda a, b: a * b),
    "div": binary_cases(lambda a, b: a / b, b=positive) + [
        Case((rand(3, 4), positive(4)), lambda a, b, rounding_mode: np.floor(a / b), grad=False,
             kwargs={"rounding_mode": "floor"}, label="floor"),
        Case((rand(3, 4), positive(4)), lambda a, b, rounding_mode: np.trunc(a / b), grad=False,
             kwargs={"rounding_mode": "trunc"}, label="trunc")],
    "floor_divide": binary_cases(lambda a, b: np.floor_divide(a, b), b=positive, grad=False),
    "remainder": binary_cases(lambda a, b: np.remainder(a, b), b=positive),
    "pow": binary_cases(lambda a, b: a ** b, a=positive, b=rand, scalar=2.0) + [
        Case((2.0, rand(3)), lambda a, b: a ** b, label="reflected")],
    "neg": unary_cases(np.negative),
    "exp": unary_cases(np.exp),
    "log": unary_cases(np.log, positive),
    "sqrt": unary_cases(np.sqrt, positive),
    "rsqrt": unary_cases(lambda x: 1 / np.sqrt(x), positive),
    "abs": unary_cases(np.abs),
    "sin": unary_cases(np.sin),
    "cos": unary_cases(np.cos),
    "tanh": unary_cases(np.tanh),
    "sigmoid": unary_cases(lambda x: 1 / (1 + np.exp(-x))) + [
        Case((np.array([-100.0, -20.0, 0.0, 20.0, 100.0]),), lambda x: 1 / (1 + np.exp(-x)), label="extremes")],
    "erf": unary_cases(erf),
    "reciprocal": unary_cases(lambda x: 1 / x, positive),
    "floor": unary_cases(np.floor),
    "ceil": unary_cases(np.ceil),
    "sign": unary_cases(np.sign),
    "relu": unary_cases(lambda x: np.maximum(x, 0)),
    "silu": unary_cases(lambda x: x / (1 + np.exp(-x))),
    "gelu": unary_cases(_gelu) + [Case((rand(3, 4), "tanh"), _gelu, label="tanh",
                                        torch=lambda torch, x, a: torch.nn.functional.gelu(x, approximate=a))],
    "leaky_relu": unary_cases(lambda x: np.where(x > 0, x, 0.01 * x)) + [
        Case((rand(3, 4), 0.2), lambda x, s: np.where(x > 0, x, s * x), label="slope")],
    "clamp": [Case((rand(3, 4), -0.5, 0.5), lambda x, lo, hi: np.clip(x, lo, hi)),
              Case((rand(3, 4), -0.5), lambda x, lo: np.maximum(x, lo), label="min only"),
              Case((rand(3, 4), None, 0.5), lambda x, lo, hi: np.minimum(x, hi), label="max only"),
              Case((rand(3, 4), rand(4, lo=-1, hi=0), rand(3, 1, lo=0, hi=1)), lambda x, lo, hi: np.clip(x, lo, hi),
                   label="tensor bounds"),
              Case((rand(3, 4), rand(3, 4)), lambda x, lo: np.maximum(x, lo), label="tensor min")],
    "where": [Case((Bool(rand(3, 4) > 0), rand(3, 4), rand(4)), lambda c, a, b: np.where(c, a, b)),
              Case((Bool(rand(3, 1) > 0), rand(3, 4), 0.0), lambda c, a, b: np.where(c, a, b), label="scalar")],
    "masked_fill": [Case((rand(3, 4), Bool(rand(3, 4) > 0), -1.0), lambda x, m, v: np.where(m, v, x)),
                    Case((rand(3, 4), Bool(rand(4) > 0), 2.0), lambda x, m, v: np.where(m, v, x),
                         label="broadcast mask")],
    "maximum": binary_cases(np.maximum, scalar=None),
    "minimum": binary_cases(np.minimum, scalar=None),
    "eq": binary_cases(np.equal, grad=False),
    "ne": binary_cases(np.not_equal, grad=False),
    "lt": binary_cases(np.less, grad=False),
    "le": binary_cases(np.less_equal, grad=False),
    "gt": binary_cases(np.greater, grad=False),
    "ge": binary_cases(np.greater_equal, grad=False),
    "logical_and": [Case((Bool(rand(3, 4) > 0), Bool(rand(4) > 0)), lambda a, b: a & b, grad=False)],
    "logical_or": [Case((Bool(rand(3, 4) > 0), Bool(rand(4) > 0)), lambda a, b: a | b, grad=False)],
    "logical_xor": [Case((Bool(rand(3, 4) > 0), Bool(rand(4) > 0)), lambda a, b: a ^ b, grad=False)],
    "logical_not": [Case((Bool(rand(3, 4) > 0),), lambda a: ~a, grad=False)],
    "clone": unary_cases(lambda x: x.copy()),
    "sum": reduction_cases(lambda a, d, k: a.sum(axis=d, keepdims=k), "sum"),
    "mean": reduction_cases(lambda a, d, k: a.mean(axis=d, keepdims=k), "mean"),
    "prod": reduction_cases(lambda a, d, k: a.prod(axis=d, keepdims=k), "prod", keep_int_dim=True),
    "amax": reduction_cases(lambda a, d, k: a.max(axis=d, keepdims=k), "amax"),
    "amin": reduction_cases(lambda a, d, k: a.min(axis=d, keepdims=k), "amin"),
    "max": [Case((rand(3, 4),), lambda a: a.max())],
    "min": [Case((rand(3, 4),), lambda a: a.min())],
    "max.dim": [Case((rand(3, 4), 1), lambda a, d: (a.max(axis=d), a.argmax(axis=d))),
                Case((rand(3, 4), 0, True), lambda a, d, k: (a.max(axis=d, keepdims=True),
                                                             a.argmax(axis=d)[None]), label="keepdim")],
    "min.dim": [Case((rand(3, 4), 1), lambda a, d: (a.min(axis=d), a.argmin(axis=d)))],
    "argmax": [Case((rand(3, 4),), lambda a: a.argmax(), grad=False),
               Case((rand(3, 4), 1), lambda a, d: a.argmax(axis=d), grad=False)],
    "argmin": [Case((rand(3, 4),), lambda a: a.argmin(), grad=False),
               Case((rand(3, 4), 0, True), lambda a, d, k: a.argmin(axis=d)[None], grad=False)],
    "var": reduction_cases(lambda a, d, k: a.var(axis=d, keepdims=k, ddof=1), "var"),
    "std": reduction_cases(lambda a, d, k: a.std(axis=d, keepdims=k, ddof=1), "std"),
    "softmax": [Case((rand(3, 4), 1), _softmax), Case((rand(2, 3, 4), 0), _softmax, label="dim 0"),
                Case((np.ascontiguousarray(rand(5, 3)).T, -1), _softmax, label="transposed")],
    "log_softmax": [Case((rand(3, 4), 1), _log_softmax), Case((rand(2, 3, 4), -1), _log_softmax, label="3d")],
    "logsumexp": [Case((rand(3, 4), 1), lambda a, d: np.log(np.exp(a).sum(axis=d))),
                  Case((rand(3, 4), [0, 1], True), lambda a, d, k: np.log(np.exp(a).sum(keepdims=True)), label="all")],
    "cumsum": [Case((rand(3, 4), 1), lambda a, d: np.cumsum(a, axis=d)),
               Case((rand(3, 4), 0), lambda a, d: np.cumsum(a, axis=d), label="dim 0")],
    "all": [Case((Bool(rand(3, 4) > -1),), lambda a: a.all(), grad=False),
            Case((Bool(rand(3, 4) > 0), 1), lambda a, d: a.all(axis=d), grad=False)],
    "any": [Case((Bool(rand(3, 4) > 0),), lambda a: a.any(), grad=False),
            Case((Bool(rand(3, 4) > 0), 0, True), lambda a, d, k: a.any(axis=d, keepdims=True), grad=False)],
    "reshape": [Case((rand(3, 4), [2, 6]), lambda a, s: a.reshape(s)),
                Case((rand(3, 4), [-1]), lambda a, s: a.reshape(-1), label="-1"),
                Case((noncontig(3, 4), [12]), lambda a, s: a.reshape(s), label="non-contiguous")],
    "view": [Case((rand(3, 4), [4, 3]), lambda a, s: a.reshape(s), torch=_method("view")),
             Case((rand(2, 3, 4), [-1, 4]), lambda a, s: a.reshape(s), torch=_method("view"), label="-1")],
    "flatten": [Case((rand(2, 3, 4),), lambda a: a.reshape(-1)),
                Case((rand(2, 3, 4), 1), lambda a, s: a.reshape(2, -1), label="start 1")],
    "squeeze": [Case((rand(3, 1, 4, 1),), lambda a: a.squeeze()),
                Case((rand(3, 1, 4), 1), lambda a, d: a.squeeze(d), label="dim")],
    "unsqueeze": [Case((rand(3, 4), 1), lambda a, d: np.expand_dims(a, d)),
                  Case((rand(3, 4), -1), lambda a, d: np.expand_dims(a, d), label="-1")],
    "permute": [Case((rand(2, 3, 4), [2, 0, 1]), lambda a, p: a.transpose(p))],
    "transpose": [Case((rand(2, 3, 4), 0, 2), lambda a, i, j: np.swapaxes(a, i, j))],
    "t": [Case((rand(3, 4),), lambda a: a.T), Case((rand(4),), lambda a: a, label="1-d")],
    "expand": [Case((rand(3, 1), [3, 4]), lambda a, s: np.broadcast_to(a, s), torch=_method("expand")),
               Case((rand(4), [2, -1]), lambda a, s: np.broadcast_to(a, (2, 4)), torch=_method("expand"),
                    label="new dim")],
    "detach": [Case((rand(3, 4),), lambda a: a, grad=False, torch=_method("detach"))],
    "contiguous": [Case((noncontig(3, 4),), lambda a: a, torch=_method("contiguous")),
                   Case((rand(),), lambda a: a, torch=_method("contiguous"), label="0-d")],
    "cat": [Case(([rand(2, 3), rand(1, 3)],), lambda ts: np.concatenate(ts)),
            Case(([rand(2, 3), rand(2, 2)], 1), lambda ts, d: np.concatenate(ts, axis=d), label="dim 1")],
    "stack": [Case(([rand(2, 3), rand(2, 3)],), lambda ts: np.stack(ts)),
              Case(([rand(2, 3), rand(2, 3)], -1), lambda ts, d: np.stack(ts, axis=d), label="last")],
    "split": [Case((rand(5, 3), 2), lambda a, s: (a[:2], a[2:4], a[4:])),
              Case((rand(3, 2), 3), lambda a, s: (a,), label="one piece"),
              Case((rand(3, 5), [1, 4], 1), lambda a, s, d: (a[:, :1], a[:, 1:]), label="sizes")],
    "chunk": [Case((rand(5, 3), 2), lambda a, c: (a[:3], a[3:]))],
    "narrow": [Case((rand(4, 5), 1, 1, 3), lambda a, d, s, n: a[:, 1:4])],
    "select": [Case((rand(3, 4), 1, 2), lambda a, d, i: a[:, 2], torch=lambda torch, t, d, i: t.select(d, i)),
               Case((rand(3), 0, -1), lambda a, d, i: a[-1], torch=lambda torch, t, d, i: t.select(d, i),
                    label="to 0-d")],
    "slice": [Case((rand(5, 6), 1, 1, -1, 2), lambda a, d, s, e, st: a[:, 1:-1:2],
                   torch=lambda torch, t, d, s, e, st: t[:, s:e:st])],
    "index": [Case((rand(5, 3), [Int(np.array([0, 2, 4, 2]))]), _index_ref, torch=_torch_index),
              Case((rand(4, 5), [None, Int(np.array([[1, 0], [3, 3]]))]), _index_ref, torch=_torch_index,
                   label="2-d index on dim 1"),
              Case((rand(3, 4), [Bool(rand(3, 4) > 0)]), _index_ref, torch=_torch_index, label="mask")],
    "index_put": [Case((rand(5, 3), [_unique_index(5, 2)], rand(2, 3)), _index_put_ref, torch=_torch_index_put),
                  Case((rand(5, 3), [Int(np.array([1, 1, 3]))], rand(3, 3), True), _index_put_ref,
                       torch=_torch_index_put, label="accumulate")],
    "index_select": [Case((rand(5, 3), 0, Int(np.array([4, 0, 0]))), lambda a, d, i: np.take(a, i, axis=d))],
    "gather": [Case((rand(3, 4), 1, Int(rng.integers(0, 4, (3, 2)))), _gather_ref)],
    "repeat": [Case((rand(2, 3), [2, 1, 2]), lambda a, r: np.tile(a, r), torch=_method("repeat"))],
    "flip": [Case((rand(3, 4), [0, 1]), lambda a, d: np.flip(a, d))],
    "copy": [Case((rand(3, 4), rand(4)), lambda a, b: np.broadcast_to(b, a.shape),
                  torch=lambda torch, a, b: a.clone().copy_(b))],
    "fill": [Case((rand(3, 4), 2.5), lambda a, v: np.full_like(a, v)),
             Case((rand(3, 4), rand()), lambda a, v: np.full_like(a, v), label="0-d tensor value")],
    "zero": [Case((rand(3, 4),), np.zeros_like, torch=lambda torch, a: a.clone().zero_())],
    "to.dtype": [Case((rand(3, 4), "float64"), lambda a, d: a, torch=lambda torch, t, d: t.to(d))],
    "matmul": [Case((rand(3, 4), rand(4, 2)), np.matmul),
               Case((rand(2, 3, 4), rand(4)), np.matmul, label="matrix-vector"),
               Case((rand(4), rand(2, 4, 3)), np.matmul, label="vector-batched"),
               Case((rand(2, 1, 3, 4), rand(5, 4, 2)), np.matmul, label="broadcast batch")],
    "mm": [Case((rand(3, 4), rand(4, 2)), np.matmul)],
    "bmm": [Case((rand(2, 3, 4), rand(2, 4, 2)), np.matmul)],
    "linear": [Case((rand(5, 4), rand(3, 4), rand(3)), lambda x, w, b: x @ w.T + b, torch=_F("linear")),
               Case((rand(2, 5, 4), rand(3, 4)), lambda x, w: x @ w.T, torch=_F("linear"), label="no bias 3d")],
    "conv2d": [Case((rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)), _conv2d_ref, torch=_F("conv2d")),
               Case((rand(1, 4, 7, 7), rand(6, 2, 3, 3), None, [2, 2], [1, 1], [1, 1], 2), _conv2d_ref,
                    torch=_F("conv2d"), label="stride pad groups"),
               Case((rand(1, 2, 7, 7), rand(2, 2, 3, 3), None, [1, 1], [2, 2], [2, 2], 1), _conv2d_ref,
                    torch=_F("conv2d"), label="dilation")],
    "max_pool2d": [Case((rand(2, 3, 6, 6), [2, 2]), lambda x, k: _pool_ref(x, 2, None, 0, "max", -np.inf),
                        torch=_F("max_pool2d")),
                   Case((rand(1, 2, 7, 7), [3, 3], [2, 2], [1, 1]),
                        lambda x, k, s, p: _pool_ref(x, 3, 2, 1, "max", -np.inf), torch=_F("max_pool2d"),
                        label="stride pad")],
    "avg_pool2d": [Case((rand(2, 3, 6, 6), [2, 2]), lambda x, k: _pool_ref(x, 2, None, 0, "avg", 0.0),
                        torch=_F("avg_pool2d")),
                   Case((rand(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], False, False),
                        lambda x, k, s, p, c, i: _pool_ref(x, 3, 2, 1, "avg", 0.0, include_pad=False),
                        torch=_F("avg_pool2d"), label="exclude pad")],
    "adaptive_avg_pool2d": [Case((rand(2, 3, 6, 6), [1, 1]), _adaptive_ref, torch=_F("adaptive_avg_pool2d")),
                            Case((rand(1, 2, 7, 5), [3, 2]), _adaptive_ref, torch=_F("adaptive_avg_pool2d"),
                                 label="uneven")],
    "batch_norm": [Case((rand(4, 3, 2, 2), rand(3), positive(3), rand(3), rand(3)), _batch_norm_eval_ref,
                        torch=_F("batch_norm"), label="eval", nograd=(1, 2)),
                   Case((rand(4, 3, 2, 2), np.zeros(3), np.ones(3), rand(3), rand(3), True), _batch_norm_eval_ref,
                        torch=_F("batch_norm"), label="training", rtol=1e-4, atol=1e-4, nograd=(1, 2))],
    "layer_norm": [Case((rand(3, 4, 5), [5], rand(5), rand(5)), _layer_norm_ref, torch=_F("layer_norm"), rtol=1e-4,
                        atol=1e-4),
                   Case((rand(3, 4, 5), [4, 5]), _layer_norm_ref, torch=_F("layer_norm"), label="2 dims", rtol=1e-4,
                        atol=1e-4)],
    "dropout": [Case((rand(3, 4), 0.0, True), lambda x, p, t: x, torch=_F("dropout"), label="p=0"),
                Case((rand(3, 4), 0.5, False), lambda x, p, t: x, torch=_F("dropout"), label="eval")],
    "zeros": [Case(([2, 3],), lambda s: np.zeros(s), grad=False)],
    "ones": [Case(([2, 3],), lambda s: np.ones(s), grad=False)],
    "full": [Case(([2, 3], 1.5), lambda s, v: np.full(s, v), grad=False)],
    "zeros_like": [Case((rand(2, 3),), np.zeros_like, grad=False)],
    "ones_like": [Case((rand(2, 3),), np.ones_like, grad=False)],
    "full_like": [Case((rand(2, 3), 2.5), lambda a, v: np.full_like(a, v), grad=False)],
    "arange": [Case((5,), lambda n: np.arange(n), grad=False),
               Case((1, 2.0, 0.25), lambda a, b, s: np.arange(a, b, s), grad=False, label="float step")],
    "linspace": [Case((0, 1, 5), lambda a, b, n: np.linspace(a, b, n), grad=False)],
    "scalar_tensor": [Case((3,), np.asarray, grad=False), Case((2.5,), np.asarray, grad=False, label="float")],
    "eye": [Case((3,), np.eye, grad=False), Case((2, 4), np.eye, grad=False, label="rect")],
    "new_zeros": [Case((rand(2), [3, 2]), lambda a, s: np.zeros(s), grad=False,
                       torch=lambda torch, t, s: t.new_zeros(s))],
    "new_ones": [Case((rand(2), [2]), lambda a, s: np.ones(s), grad=False, torch=lambda torch, t, s: t.new_ones(s))],
    "new_full": [Case((rand(2), [2, 1], 1.5), lambda a, s, v: np.full(s, v), grad=False,
                      torch=lambda torch, t, s, v: t.new_full(s, v))],
}

# Ops whose values are not deterministic functions of their inputs: checked by statistics and seeding.
STOCHASTIC = {"empty", "empty_like", "new_empty",
              "rand", "randn", "rand_like", "randn_like", "randint", "randint.low", "randint_like",
              "randint_like.low", "randperm", "normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor",
              "normal.float_float", "normal.like", "uniform", "exponential", "geometric", "log_normal", "cauchy",
              "random", "random.to", "random.from", "bernoulli", "bernoulli.p", "bernoulli.fill", "multinomial",
              "poisson", "_standard_gamma", "binomial", "_sample_dirichlet"}
# Scalar ops (sizes and Python-number arithmetic) are exercised by the IR and script tests.
SCALAR_KIND = "scalar"


def unwrap(value) -> Any:
    """Arrays in place of Int/Bool markers, also inside lists (what references receive)."""
    if isinstance(value, (Int, Bool, Complex)):
        return value.array
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def _merge_case_modules() -> None:
    """Cases kept in their own modules (tests/ops/cases_<family>.py, each with a CASES dict), merged
    into CASES: a new family is a new file, found here by its name."""
    import importlib
    import pkgutil
    from pathlib import Path

    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("cases_"))
    for name in names:
        family = importlib.import_module(f"{__package__}.{name}").CASES
        overlap = set(family) & set(CASES)
        assert not overlap, f"cases declared twice: {overlap}"
        CASES.update(family)


_merge_case_modules()
