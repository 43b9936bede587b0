"""conv2d's im2col on random geometry: padding wider than the kernel's reach, strides past the
input, dilation and groups, against a direct float64 loop (forward) and central differences
(gradients)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
import scriptc.nn.functional as F
from scriptc.autograd import gradcheck
from scriptc.errors import ShapeError
from scriptc.ops import OPS

from .cases import _conv2d_ref


@st.composite
def geometries(draw):
    groups = draw(st.sampled_from([1, 2]))
    return dict(n=draw(st.integers(1, 2)), groups=groups, cg=draw(st.integers(1, 2)), og=draw(st.integers(1, 2)),
                h=draw(st.integers(1, 8)), w=draw(st.integers(1, 8)), kh=draw(st.integers(1, 3)),
                kw=draw(st.integers(1, 3)), stride=[draw(st.integers(1, 3)), draw(st.integers(1, 3))],
                padding=[draw(st.integers(0, 4)), draw(st.integers(0, 4))],
                dilation=[draw(st.integers(1, 3)), draw(st.integers(1, 3))], bias=draw(st.booleans()),
                seed=draw(st.integers(0, 1000)))


def _arrays(g):
    rng = np.random.default_rng(g["seed"])
    x = rng.standard_normal((g["n"], g["groups"] * g["cg"], g["h"], g["w"]))
    w = rng.standard_normal((g["groups"] * g["og"], g["cg"], g["kh"], g["kw"]))
    b = rng.standard_normal(g["groups"] * g["og"]) if g["bias"] else None
    return x, w, b


def _output_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@settings(max_examples=150, deadline=None)
@given(geometries())
def test_forward_matches_a_direct_loop(g):
    x, w, b = _arrays(g)
    args = (g["stride"], g["padding"], g["dilation"], g["groups"])
    sizes = [_output_size(g[d], g["k" + d], g["stride"][i], g["padding"][i], g["dilation"][i])
             for i, d in enumerate("hw")]
    tensors = [scriptc.tensor(x), scriptc.tensor(w), None if b is None else scriptc.tensor(b)]
    if min(sizes) <= 0:
        with pytest.raises(ShapeError):
            F.conv2d(*tensors, *args)
        return
    got = F.conv2d(*tensors, *args).numpy()
    np.testing.assert_allclose(got, _conv2d_ref(x, w, b, *args), rtol=1e-10, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(geometries())
def test_gradients_match_central_differences(g):
    x, w, b = _arrays(g)
    args = (g["stride"], g["padding"], g["dilation"], g["groups"])
    if min(_output_size(g[d], g["k" + d], g["stride"][i], g["padding"][i], g["dilation"][i])
           for i, d in enumerate("hw")) <= 0:
        return
    inputs = [scriptc.tensor(a, requires_grad=True) for a in (x, w, b) if a is not None]
    assert gradcheck(lambda *t: F.conv2d(t[0], t[1], t[2] if len(t) > 2 else None, *args), inputs,
                     eps=1e-6, atol=1e-5, rtol=1e-4)


@settings(max_examples=60, deadline=None)
@given(geometries(), st.integers(0, 5), st.integers(1, 4))
def test_a_batch_taken_a_few_images_at_a_time_equals_the_whole_batch(g, n, images_per_step):
    """`column_bytes` (what a backend passes to keep the columns in cache) changes how many images
    go through im2col and the GEMM at once, never the result: steps that do not divide the batch,
    an empty batch, one image a step or all, bias or none, and an unbatched input."""
    g = dict(g, n=n)
    x, w, b = _arrays(g)
    args = (g["stride"], g["padding"], g["dilation"], g["groups"])
    if min(_output_size(g[d], g["k" + d], g["stride"][i], g["padding"][i], g["dilation"][i])
           for i, d in enumerate("hw")) <= 0:
        return
    conv = OPS["conv2d"].kernel
    whole = conv(np, x, w, b, *args)
    one_image = w.shape[1] * g["groups"] * w.shape[2] * w.shape[3] * whole.shape[2] * whole.shape[3] * x.itemsize
    for column_bytes in (1, one_image * images_per_step, one_image * images_per_step + one_image // 2):
        got = conv(np, x, w, b, *args, column_bytes=column_bytes)
        assert got.shape == whole.shape and got.dtype == whole.dtype
        np.testing.assert_array_equal(got, whole)
    if n:
        np.testing.assert_array_equal(conv(np, x[0], w, b, *args, column_bytes=1), whole[0])
