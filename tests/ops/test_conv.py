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
