"""LLVM codegen: every pointwise and reduction op compiled (alone and in random chains) equals the
reference interpreter; the math library's error bounds; vector instructions; caching; no recompiles."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc as torch
from scriptc import ops
from scriptc.codegen.kernel import build_spec
from scriptc.codegen.llvm import driver
from scriptc.runtime import Interpreter
from scriptc.runtime.executor import Executor

from ..ops.cases import CASES, Bool, Int

SIZES = [0, 1, 7, 1023]


def _compile(fn, examples):
    traced = torch.jit.trace(fn, tuple(torch.tensor(e) for e in examples), check_trace=False)
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    return graph, Executor(graph, threads=2)


def _check(graph, executor, inputs, rtol=2e-6, atol=2e-6):
    expected = Interpreter(graph).run(inputs)
    got = executor(inputs)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)


POINTWISE = [op for op in ops.all_ops() if op.kind == ops.POINTWISE and op.inplace_of is None
             and op.name not in ("to.dtype", "clone")]


def _case_inputs(case):
    arrays, extras = [], []
    for a in case.args:
        if isinstance(a, (np.ndarray, Int, Bool)):
            arrays.append(a)
        else:
            extras.append(a)
    return arrays


@pytest.mark.parametrize("op", POINTWISE, ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_pointwise_op_compiles_and_matches(op, dtype):
    case = CASES[op.name][0]
    positions = [i for i, a in enumerate(case.args) if isinstance(a, (np.ndarray, Int, Bool))]

    def fn(*tensors):
        args = list(case.args)
        for p, t in zip(positions, tensors):
            args[p] = t
        # `* 2` keeps the op in a group of two, the smallest the fuser compiles.
        out = torch.tensors.call(op, op.bind(tuple(args), case.kwargs))
        return out * 2 if out.dtype != torch.bool else torch.logical_not(out)
    base = [case.args[p] for p in positions]
    examples = [b.array if isinstance(b, (Int, Bool)) else b.astype(dtype) for b in base]
    graph, executor = _compile(fn, examples)
    assert executor.compiled_groups >= 1 or op.name in ("floor_divide", "remainder", "pow") or \
        op.name.startswith("bitwise_"), \
        [s.reason for s in executor.group_steps]
    rng = np.random.default_rng(0)
    full_rank = max(e.ndim for e in examples)
    for n in SIZES:
        inputs = []
        for b, e in zip(base, examples):
            shape = (n,) + e.shape[1:] if e.ndim == full_rank and e.ndim else e.shape
            if isinstance(b, Bool):
                inputs.append(rng.random(shape) > 0.5)
            elif isinstance(b, Int):
                inputs.append(rng.integers(0, 8, shape))
            else:
                lo = 0.2 if op.name in ("log", "sqrt", "rsqrt", "reciprocal", "div", "pow") else -3
                inputs.append(rng.uniform(lo, 3, shape).astype(dtype))
        _check(graph, executor, inputs, rtol=1e-5 if dtype == np.float32 else 1e-10,
               atol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("name, fn", [
    ("sum", lambda x: (x * 2).sum(dim=-1)), ("mean", lambda x: (x + 1).mean(dim=-1, keepdim=True)),
    ("amax", lambda x: x.abs().amax(dim=-1)), ("amin", lambda x: (x * 3).amin(dim=-1, keepdim=True)),
    ("softmax", lambda x: torch.softmax(x * 2, -1)), ("log_softmax", lambda x: torch.log_softmax(x - 1, dim=-1)),
    ("layer_norm", lambda x: torch.nn.functional.layer_norm(x * 2, [x.shape[-1]])),
    # of an input as it is: the later passes read the input's row instead of a copy of it
    ("softmax", lambda x: torch.softmax(x, -1)), ("log_softmax", lambda x: torch.log_softmax(x, -1)),
    ("layer_norm", lambda x: torch.nn.functional.layer_norm(x, [x.shape[-1]])),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_compile_and_match(name, fn, dtype):
    graph, executor = _compile(fn, [np.ones((3, 5), dtype)])
    assert executor.compiled_groups == 1, [s.reason for s in executor.group_steps]
    rng = np.random.default_rng(1)
    shapes = [(1, 1), (7, 3), (4, 1023), (2, 1 << 10), (3, 0)]
    if name == "layer_norm":
        shapes = [(1, 5), (7, 5), (1030, 5), (0, 5)]  # normalized_shape is part of the traced graph
    for rows, inner in shapes:
        x = (rng.standard_normal((rows, inner)) * 4).astype(dtype)
        if inner == 0 and name in ("amax", "amin"):
            with pytest.raises(RuntimeError, match="Expected reduction dim"):
                executor([x])  # as torch.jit: no max of an empty row
            continue
        _check(graph, executor, [x], rtol=1e-5 if dtype == np.float32 else 1e-11, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-3, True), (2, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("w_size", [4, 1], ids=["w", "w-broadcast"])
def test_reductions_over_any_dim_compile_and_match(name, dim, keepdim, dtype, w_size):
    def fn(x, w):
        v = x * w + 0.5 if name != "prod" else 1 + 0.1 * torch.tanh(x * w)
        return getattr(v, name)(dim=dim, keepdim=keepdim)
    graph, executor = _compile(fn, [np.ones((2, 3, 4), dtype), np.ones(w_size, dtype)])
    step = executor.group_steps[0]
    assert executor.compiled_groups == 1, step.reason
    rng = np.random.default_rng(5)
    shapes = [(1, 1, 1), (2, 7, 3), (3, 5, 1023), (1023, 1, 2), (7, 0, 3), (0, 3, 2), (3, (1 << 20) // 9, 3)]
    tolerance = dict(rtol=2e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    empty_extremes = 0
    for shape in shapes:
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal(shape[-1] if w_size > 1 else 1).astype(dtype)
        if name in ("amax", "amin") and shape[dim] == 0:
            with pytest.raises(RuntimeError, match="Expected reduction dim"):
                executor([x, w])  # as torch.jit: no max over an empty dim (the reference raises it)
            empty_extremes += 1
            continue
        _check(graph, executor, [x, w], **tolerance)
        transposed = np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0)  # copied contiguous at launch
        _check(graph, executor, [transposed, w], **tolerance)
    # Every other signature ran the kernel, not the unfused subgraph.
    assert sum(launch is None for launch in step._launches.values()) == empty_extremes


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("w_size", [4, 1], ids=["w", "w-broadcast"])
def test_softmax_over_any_dim_compiles_and_matches(name, dim, dtype, w_size):
    def fn(x, w):
        return getattr(torch, name)(x * w + 0.5, dim=dim)
    graph, executor = _compile(fn, [np.ones((2, 3, 4), dtype), np.ones(w_size, dtype)])
    step = executor.group_steps[0]
    assert executor.compiled_groups == 1, step.reason
    rng = np.random.default_rng(6)
    # (3, 5, 600): the last dim spans three chunks of columns, the last one partial
    shapes = [(1, 1, 1), (2, 7, 3), (3, 5, 600), (1023, 1, 2), (7, 0, 3), (3, (1 << 20) // 9, 3)]
    tolerance = dict(rtol=2e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for shape in shapes:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        w = rng.standard_normal(shape[-1] if w_size > 1 else 1).astype(dtype)
        _check(graph, executor, [x, w], **tolerance)
        transposed = np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0)
        _check(graph, executor, [transposed, w], **tolerance)
    special = np.zeros((2, 3, 4), dtype)
    special[0, :, 0] = -np.inf    # a column that is all -inf: NaN, as the reference gives
    special[1, 1, 1] = np.nan     # a NaN makes its column NaN
    special[1, 0, 2] = np.inf
    with np.errstate(all="ignore"):
        expected = Interpreter(graph).run([special, np.ones(w_size, dtype)])[0]
        got = executor([special, np.ones(w_size, dtype)])[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=1e-6)
    assert all(launch is not None for launch in step._launches.values())


@pytest.mark.parametrize("normalized", [(4, 5), (3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_over_several_last_dims_compiles_and_matches(normalized, affine, dtype):
    torch.manual_seed(7)
    norm = torch.nn.LayerNorm(list(normalized), elementwise_affine=affine).to(
        torch.float64 if dtype == np.float64 else torch.float32)
    if affine:
        with torch.no_grad():
            norm.weight.copy_(torch.randn(*normalized, dtype=norm.weight.dtype))
            norm.bias.copy_(torch.randn(*normalized, dtype=norm.bias.dtype))
    graph, executor = _compile(lambda x: norm(x * 2.0 + 1.0), [np.ones((2, 3, 4, 5), dtype)])
    step = executor.group_steps[0]
    assert executor.compiled_groups == 1, step.reason
    assert step.spec.notes["merge"] == (4 - len(normalized), 3)
    rng = np.random.default_rng(8)
    tolerance = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for batch in (1, 2, 7, 0):
        x = rng.standard_normal((batch, 3, 4, 5)).astype(dtype)
        _check(graph, executor, [x], **tolerance)
        _check(graph, executor, [np.ascontiguousarray(x.transpose(3, 2, 1, 0)).transpose(3, 2, 1, 0)], **tolerance)
    assert all(launch is not None for launch in step._launches.values())


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("dims", [(0, 2), (0, 3), (1, 3), (0, 1, 3), (-1, 1), (0, 2, 3)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_reductions_over_dims_that_are_not_adjacent_compile_and_match(name, dims, keepdim):
    # The kernel reduces the last run of adjacent dims; the executor reduces the rest of its result.
    def fn(x, w):
        return getattr(x * w + 0.5, name)(dim=dims, keepdim=keepdim)
    graph, executor = _compile(fn, [np.ones((2, 3, 4, 5), np.float32), np.ones((1, 1, 1, 1), np.float32)])
    step = executor.group_steps[0]
    assert executor.compiled_groups == 1, step.reason
    assert step.spec.notes["then"] is not None
    rng = np.random.default_rng(9)
    for shape in [(2, 3, 4, 5), (1, 1, 1, 1), (3, 7, 2, 33), (2, 3, 1024, 5), (0, 3, 4, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((1, 1, 1, 1)).astype(np.float32)
        if name in ("amax", "amin") and shape[0] == 0 and 0 in dims:
            with pytest.raises(RuntimeError, match="Expected reduction dim"):
                executor([x, w])  # as torch.jit: no max over an empty dim (the reference raises it)
            continue
        _check(graph, executor, [x, w], rtol=2e-5, atol=1e-5)  # (a mean over nothing: NaN, as the reference)


ADJACENT_CASES = [  # (dims, keepdim, w's shape, whether the group compiles)
    ((2, 3), False, (3, 1, 1), True),       # a per-channel scale, then a global average pool
    ((2, 3), True, (1, 1, 1, 1), True),
    ((2, 3), False, (5,), False),           # w broadcasts over dim 2 but not 3: no stride walks both
    ((0, 1), False, (1, 1, 1, 1), True),
    ((0, 1), True, (3, 1, 1), False),
    ((1, 2), True, (1, 1, 1, 1), True),
    (None, False, (1, 1, 1, 1), True),      # every dim
    (None, False, (3, 1, 1), False),
    ((-1, 0, 2, 1), True, (1, 1, 1, 1), True),
]


@pytest.mark.parametrize("name, dims, keepdim, w_shape, compiles", [
    (name, *case) for case in ADJACENT_CASES for name in ("sum", "mean", "amax", "amin", "prod")
    if name != "prod" or case[0] is None])  # prod takes one dim, or none
def test_reductions_over_adjacent_dims_compile_and_match(name, dims, keepdim, w_shape, compiles):
    def fn(x, w):
        v = x * w + 0.5 if name != "prod" else 1 + 0.1 * torch.tanh(x * w)
        if dims is None:
            return getattr(v, name)() if name in ("sum", "mean", "prod") else getattr(v, name)(dim=[])
        return getattr(v, name)(dim=dims, keepdim=keepdim)
    graph, executor = _compile(fn, [np.ones((2, 3, 4, 5), np.float32), np.ones(w_shape, np.float32)])
    assert executor.compiled_groups == int(compiles), [s.reason for s in executor.group_steps]
    rng = np.random.default_rng(8)
    for shape in [(2, 3, 4, 5), (1, 3, 1, 1), (4, 3, 33, 65), (2, 3, 0, 5), (64, 3, 32, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal([{3: shape[1], 5: shape[3]}.get(n, n) for n in w_shape]).astype(np.float32)
        try:
            expected = Interpreter(graph).run([x, w])
        except RuntimeError as refusal:  # an empty amax/amin: torch.jit's RuntimeError
            with pytest.raises(type(refusal)):
                executor([x, w])
            continue
        got = executor([x, w])
        assert got[0].shape == expected[0].shape
        np.testing.assert_allclose(got[0], expected[0], rtol=5e-5, atol=1e-4)
    if compiles:  # every signature but an empty amax/amin ran the kernel
        assert sum(v is None for v in executor.group_steps[0]._launches.values()) <= 1


def test_a_reduction_of_an_input_alone_compiles():
    # The group is the reduction only: it iterates over its input's rank, not its output's.
    graph, executor = _compile(lambda x: x.sum(dim=-1), [np.ones((3, 5), np.float32)])
    assert executor.compiled_groups == 1, [s.reason for s in executor.group_steps]
    x = np.random.default_rng(6).standard_normal((9, 1023)).astype(np.float32)
    _check(graph, executor, [x], rtol=1e-5, atol=1e-5)
    assert None not in executor.group_steps[0]._launches.values()


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "amax", "amin"])
def test_rows_with_nan_and_infinities_match(name):
    # These kernels let LLVM assume no NaNs where it cannot change the answer (softmax) or track
    # them on the side (amax/amin): rows holding NaNs and infinities show it does not.
    fn = (lambda x: getattr(torch, name)(x * 1, -1)) if "softmax" in name else (lambda x: getattr(x * 1, name)(-1))
    graph, executor = _compile(fn, [np.ones((3, 5), np.float32)])
    x = np.random.default_rng(7).standard_normal((6, 37)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 5] = np.inf
    x[2, 7] = -np.inf
    x[3] = -np.inf
    x[4, :2] = np.nan
    _check(graph, executor, [x])


def test_large_inputs_split_across_threads_match():
    graph, executor = _compile(lambda x, w: torch.tanh(x * w) + 1, [np.ones((2, 3), np.float32),
                                                                    np.ones(3, np.float32)])
    x = np.random.default_rng(2).standard_normal(((1 << 20) + 3) // 3 * 3).reshape(-1, 3).astype(np.float32)
    _check(graph, executor, [x, np.array([1.0, -2.0, 0.5], np.float32)])
    assert (x.size >= 1 << 20)


def test_transposed_and_broadcast_inputs():
    graph, executor = _compile(lambda x, b: torch.sigmoid(x + b) * x, [np.ones((4, 5), np.float32),
                                                                       np.ones((1, 5), np.float32)])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4)).astype(np.float32).T
    _check(graph, executor, [x, rng.standard_normal((1, 5)).astype(np.float32)])
    # A new broadcast pattern or dtype misses the guard and still gives the right answer.
    _check(graph, executor, [rng.standard_normal((4, 1)).astype(np.float32), rng.standard_normal((1, 5)).astype(
        np.float32)])
    _check(graph, executor, [x.astype(np.float64), rng.standard_normal((1, 5))])



def _bool_select(c, x, y):
    # A select whose branches are both comparisons (i1 values), fused with bool and float neighbours.
    picked = torch.where(c, x > y, x < y) ^ (x > 1.0)
    return torch.where(picked, x * 2.0, y - x) + picked.to(x.dtype)


@pytest.mark.parametrize("script", [False, True], ids=["trace", "script"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_a_select_of_two_bool_comparisons_compiles_and_matches(script, dtype):
    rng = np.random.default_rng(5)

    def inputs(rows):
        values = [(rng.standard_normal((rows, 67)) * 3).astype(dtype) for _ in range(2)]
        return [rng.random((rows, 67)) > 0.5] + values
    if script:
        graph = torch.jit.optimize_for_inference(torch.jit.script(_bool_select), jit=False).graph
        executor = Executor(graph, threads=2)
    else:
        graph, executor = _compile(_bool_select, inputs(2))
    for rows in (2, 1, 33, 0):
        _check(graph, executor, inputs(rows))
    assert executor.group_steps and executor.compiled_groups == len(executor.group_steps), \
        [s.reason for s in executor.group_steps]


def test_inputs_only_the_blas_head_reads_reach_the_kernel_untouched(monkeypatch):
    graph, executor = _compile(lambda x, w, b: torch.relu(x @ w + b), [np.ones((4, 6), np.float32),
                                                                        np.ones((6, 5), np.float32),
                                                                        np.ones(5, np.float32)])
    assert executor.compiled_groups == 1 and executor.group_steps[0].head is not None
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 4)).astype(np.float32).T  # not contiguous: only matmul reads it
    inputs = [x, rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    _check(graph, executor, inputs)
    copied = []
    real = np.ascontiguousarray
    monkeypatch.setattr(np, "ascontiguousarray", lambda a, *args, **kw: copied.append(a.shape) or real(a, *args, **kw))
    executor(inputs)
    assert copied == []


def test_constant_weights_and_results_the_caller_keeps():
    # A frozen linear's bias is a graph constant: the kernel reads it through a pointer set once per
    # thread, and an output array is recycled only when nothing outside holds it.
    layer = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()).eval()
    traced = torch.jit.trace(layer, torch.ones(4, 6))
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    executor = Executor(graph, threads=2)
    step = executor.group_steps[0]
    assert executor.compiled_groups == 1 and step.fixed_reads and executor.constants
    rng = np.random.default_rng(7)
    kept = []
    for batch in (4, 4, 3, 4, 1):
        x = rng.standard_normal((batch, 6)).astype(np.float32)
        (out,) = executor([x])
        np.testing.assert_allclose(out, layer(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)
        kept.append((out, out.copy()))
    for out, copy in kept:
        np.testing.assert_array_equal(out, copy)
    before = executor([x])[0].__array_interface__["data"][0]
    assert executor([x])[0].__array_interface__["data"][0] == before  # dropped results are reused


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["tanh", "sigmoid", "relu", "neg", "exp_small", "mulw", "addb", "erf", "gelu",
                                 "square", "abs", "clamp"]), min_size=2, max_size=8), st.integers(0, 1000))
def test_random_fused_chains_match(chain, seed):
    def fn(x, w, b):
        y = x
        for step in chain:
            y = {"tanh": lambda v: torch.tanh(v), "sigmoid": lambda v: torch.sigmoid(v),
                 "relu": lambda v: torch.relu(v), "neg": lambda v: -v, "exp_small": lambda v: torch.exp(v * 0.1),
                 "mulw": lambda v: v * w, "addb": lambda v: v + b, "erf": lambda v: torch.erf(v),
                 "gelu": lambda v: torch.nn.functional.gelu(v), "square": lambda v: v * v,
                 "abs": lambda v: v.abs(), "clamp": lambda v: torch.clamp(v, -2.0, 2.0)}[step](y)
        return y
    graph, executor = _compile(fn, [np.ones((2, 4), np.float32), np.ones(4, np.float32), np.ones((2, 1), np.float32)])
    rng = np.random.default_rng(seed)
    for rows in (1, 7):
        _check(graph, executor, [rng.standard_normal((rows, 4)).astype(np.float32),
                                 rng.standard_normal(4).astype(np.float32),
                                 rng.standard_normal((rows, 1)).astype(np.float32)], rtol=2e-5, atol=2e-5)


def _ulp(got, ref, dtype):
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(dtype)).astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, domain, bound", [
    ("exp", (-80, 80), 2), ("log", (1e-30, 1e30), 3), ("tanh", (-20, 20), 6), ("sigmoid", (-30, 30), 4),
])
def test_math_library_error_bounds_in_ulps(dtype, name, domain, bound):
    fn = {"exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[name]
    # `* 2` (exact) makes a two-op group, the smallest the fuser compiles.
    graph, executor = _compile(lambda x: fn(x) * 2, [np.ones(4, dtype)])
    assert executor.compiled_groups == 1
    lo, hi = domain
    x = (np.geomspace(lo, hi, 200001) if name == "log" else np.linspace(lo, hi, 200001)).astype(dtype)
    got = executor([x])[0] / 2
    ref = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[name](
        x.astype(np.float64))
    assert np.nanmax(_ulp(got, ref, dtype)) <= bound
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45 if dtype == np.float32 else 1e-320], dtype)
    with np.errstate(all="ignore"):
        expected = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[name](
            special)
    got = executor([special])[0] / 2
    finite = np.isfinite(special) & (np.abs(special) > 1e-30) | ~np.isfinite(special)
    np.testing.assert_array_equal(np.isnan(got[finite]), np.isnan(expected[finite]))
    np.testing.assert_array_equal(got[finite & ~np.isnan(expected)], expected[finite & ~np.isnan(expected)])


@pytest.mark.parametrize("dtype, bound", [(np.float32, 1e-6), (np.float64, 1e-13)])
def test_erf_error_bound(dtype, bound):
    import math
    graph, executor = _compile(lambda x: torch.erf(x) * 2, [np.ones(4, dtype)])
    assert executor.compiled_groups == 1
    x = np.linspace(-8, 8, 100001).astype(dtype)
    ref = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.abs(executor([x])[0].astype(np.float64) / 2 - ref).max() <= bound


def test_gelu_chain_kernel_uses_packed_vector_instructions():
    def gelu_chain(x, w, b):
        y = x * w + b
        return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
    traced = torch.jit.trace(gelu_chain, (torch.randn(4, 8), torch.randn(8), torch.randn(8)))
    group = next(n for n in torch.jit.optimize_for_inference(traced, jit=False).graph.nodes()
                 if n.op == "prim::FusionGroup")
    asm = driver.assembly(build_spec(group))
    packed = [line for line in asm.splitlines() if any(f"{op}ps" in line for op in ("vmul", "vadd", "vfmadd", "vdiv"))
              and ("%ymm" in line or "%zmm" in line or "%xmm" in line)]
    assert len(packed) > 10
    # The elementwise loop asks for several vectors per iteration (a lone one waits on FMA latency),
    # with a loop ID that refers to itself, as LLVM requires of one.
    from scriptc.codegen.llvm.lower import ELEMENTWISE_INTERLEAVE, lower
    text = str(lower(build_spec(group)))
    assert f'!{{ !"llvm.loop.interleave.count", i32 {ELEMENTWISE_INTERLEAVE} }}' in text
    loop_ids = re.findall(r"!llvm.loop (!\d+)", text)
    assert loop_ids and all(re.search(rf"^{i} = !{{ {i}, ", text, re.M) for i in loop_ids)


def test_second_process_compiles_nothing_and_batch_sweep_compiles_nothing(tmp_path):
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.getcwd()!r})
        import numpy as np, scriptc as torch
        from scriptc.codegen.llvm.driver import STATS
        from tests.models import MLP
        torch.manual_seed(0)
        m = torch.jit.optimize_for_inference(torch.jit.trace(MLP().eval(), torch.randn(3, 16)))
        before = STATS.compiles
        for batch in (1, 3, 64, 1000):
            m(torch.randn(batch, 16))
        print(STATS.compiles, STATS.disk_hits, STATS.compiles - before)
    """)
    env = dict(os.environ, SCRIPTC_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    compiles, _, sweep = map(int, first.stdout.split())
    assert compiles > 0 and sweep == 0
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    compiles, disk_hits, sweep = map(int, second.stdout.split())
    assert compiles == 0 and disk_hits > 0 and sweep == 0
    for f in (tmp_path / "kernels").iterdir():
        f.write_bytes(b"garbage")  # corrupt entries are ignored and rebuilt
    third = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert int(third.stdout.split()[0]) > 0


def test_jit_can_be_switched_off(monkeypatch):
    from scriptc.runtime.interpreter import Interpreter as Reference
    monkeypatch.setenv("SCRIPTC_JIT", "0")
    m = torch.jit.optimize_for_inference(torch.jit.trace(lambda x: torch.relu(x) * 2, torch.randn(3)))
    assert isinstance(m._runner, Reference)
