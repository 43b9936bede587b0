"""The packed product of a layer's frozen weights (native/linear.py): against numpy, and in programs."""

from __future__ import annotations

import ctypes
import gc
import itertools

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import linear
from scriptc.native.heads import _native_loop, gemm_runs
from scriptc.native.loops import loop_function
from scriptc.native.pointers import data_pointer
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.pool import ThreadPool

from .guard import flush_against_a_guard_page


def _run(a, packed, out, bias, floor, split=None):
    dtype = a.dtype
    loop = _native_loop("linear", dtype.name)
    floor_value = np.full(1, 0.0 if floor is None else floor, dtype)
    ptrs = (ctypes.c_void_p * 5)(*(data_pointer(v) for v in (a, packed, out, bias, floor_value)))
    meta = (ctypes.c_int64 * 4)(a.shape[0], a.shape[1], out.shape[1], floor is not None)
    panels = linear.panels(out.shape[1], dtype)
    if split is not None:
        split(loop, panels, ptrs, meta)
    else:
        loop.function(0, panels, ptrs, meta)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_packed_product_equals_numpy_for_every_tail(dtype):
    """Every count of rows past the last whole tile (tiles of 4, 2, 1), panels narrower than a panel,
    columns that fill no vector, depth 0; inputs and output flush against unreadable pages; bias and
    floor or not; split across threads or not."""
    rng = np.random.default_rng(3)
    lanes = linear.lanes(dtype)
    panel = linear.panel_columns(dtype)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    pool = ThreadPool(2)
    widths = sorted({1, lanes - 1, lanes, lanes + 3, 2 * lanes + 1, panel, panel + 1, 2 * panel + lanes + 3})
    for rows, depth, width in itertools.product([0, 1, 2, 3, 5, 7, 8, 9, 15, 23], [0, 1, 7, 40], widths):
        a_values = rng.standard_normal((rows, depth)).astype(dtype)
        weights = rng.standard_normal((depth, width)).astype(dtype)
        bias = rng.standard_normal(width).astype(dtype)
        expected = a_values.astype(np.float64) @ weights.astype(np.float64)
        a, a_done = flush_against_a_guard_page(a_values)
        packed, packed_done = flush_against_a_guard_page(linear.pack(weights))
        out, out_done = flush_against_a_guard_page(np.zeros((rows, width), dtype))
        try:
            for split, with_bias, floor in itertools.product((None, pool.split), (False, True), (None, 0.0)):
                out[...] = np.nan
                _run(a, packed, out, linear.pack_bias(bias if with_bias else None, width, dtype), floor, split)
                want = expected + bias if with_bias else expected
                want = np.maximum(want, floor) if floor is not None else want
                np.testing.assert_allclose(out, want, rtol=tolerance, atol=tolerance)
        finally:
            del a, packed, out
            a_done(), packed_done(), out_done()


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 8, 16, 21])
def test_a_depth_of_several_chunks_equals_numpy(rows):
    """Past DEPTH_CHUNK steps of k each chunk resumes from the partial sums in out and only the last
    one floors; a count of rows that is one tile alone streams its panel; a last panel of part of a
    vector reads its partial sums masked (flush against an unreadable page)."""
    rng = np.random.default_rng(rows)
    depth = 2 * linear.DEPTH_CHUNK + 37
    width = linear.panel_columns(np.float32) + 5
    a_values = rng.standard_normal((rows, depth)).astype(np.float32)
    weights = rng.standard_normal((depth, width)).astype(np.float32)
    bias = rng.standard_normal(width).astype(np.float32)
    a, a_done = flush_against_a_guard_page(a_values)
    out, out_done = flush_against_a_guard_page(np.zeros((rows, width), np.float32))
    try:
        for floor in (None, 0.0):
            out[...] = np.nan
            _run(a, linear.pack(weights), out, linear.pack_bias(bias, width, np.float32), floor)
            want = a_values.astype(np.float64) @ weights.astype(np.float64) + bias
            want = np.maximum(want, floor) if floor is not None else want
            np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
    finally:
        del a, out
        a_done(), out_done()


def test_the_floor_keeps_nan_as_numpy_maximum_does():
    a = np.ones((9, 4), np.float32)
    a[3, 1] = np.nan
    weights = np.ones((4, 20), np.float32)
    out = np.zeros((9, 20), np.float32)
    _run(a, linear.pack(weights), out, linear.pack_bias(None, 20, np.float32), 0.0)
    assert np.isnan(out[3]).all() and (out[[0, 1, 2, 4, 5, 6, 7, 8]] == 4).all()


def _layers(dtype):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(30, 50), torch.nn.ReLU(), torch.nn.Linear(50, 17),
                               torch.nn.Linear(17, 40), torch.nn.Sigmoid()).to(dtype).eval()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("how", ["traced", "scripted"])
def test_a_program_of_linear_layers_equals_the_interpreter_at_every_batch(dtype, how):
    """Compiled for one batch (or none: scripted), run on others: each Linear's product from its
    weights packed once, its bias and ReLU applied as it stores (the second layer, with no ReLU,
    its bias; the last, a sigmoid after it, the product alone and the group's kernel after)."""
    model = _layers(dtype)
    example = torch.randn(5, 30, dtype=dtype)
    module = torch.jit.trace(model, example) if how == "traced" else torch.jit.script(model)
    graph = torch.jit.optimize_for_inference(module).graph
    executor, reference = Executor(graph), Interpreter(graph)
    for batch in (1, 2, 3, 7, 8, 13, 64, 129):
        x = np.random.default_rng(batch).standard_normal((batch, 30)).astype(dtype.np)
        for _ in range(2):  # the steps, then the program they wrote down
            got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-6)
    [segment] = [s for s in executor.steps if hasattr(s, "programs")]
    [program] = segment.programs.values()
    assert program is not None and (loop_function("linear", dtype.np.name) in list(program.first_frame)) == gemm_runs()


def test_packed_weights_live_as_long_as_the_program():
    model = _layers(torch.float32)
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(4, 30))).graph
    executor = Executor(graph)
    x = np.ones((4, 30), np.float32)
    executor([x])  # (the steps; the program after them)
    expected = executor([x])[0].copy()
    del model, graph
    gc.collect()
    np.testing.assert_array_equal(executor([x])[0], expected)


def test_a_linear_layer_on_a_sequence_and_on_one_vector():
    """Rows are every leading dim ((batch, time, features) @ W), and a 1-D input is one row whose
    result is 1-D; a non-contiguous input is copied first."""
    torch.manual_seed(1)
    layer = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.ReLU()).eval()
    rng = np.random.default_rng(5)
    for shape in [(3, 5, 24), (24,), (2, 1, 24)]:
        graph = torch.jit.optimize_for_inference(torch.jit.script(layer)).graph
        executor, reference = Executor(graph), Interpreter(graph)
        x = rng.standard_normal(shape).astype(np.float32)
        for _ in range(2):
            got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-6)
        strided = rng.standard_normal(shape[:-1] + (48,)).astype(np.float32)[..., ::2]
        np.testing.assert_allclose(executor([strided])[0], reference.run([strided])[0], rtol=1e-5, atol=1e-6)


def test_weights_of_the_same_values_are_packed_once():
    """A traced recurrent model multiplies by one matrix at every step, each step's a constant of its
    own: their packed copies are one array while any program holds it, and none is kept after."""
    weights = np.random.default_rng(6).standard_normal((30, 50)).astype(np.float32)
    first = linear.packed(weights)
    assert linear.packed(weights.copy()) is first
    assert linear.packed(weights + 1) is not first
    np.testing.assert_array_equal(first, linear.pack(weights))
    del first
    gc.collect()
    again = linear.packed(weights)
    np.testing.assert_array_equal(again, linear.pack(weights))
