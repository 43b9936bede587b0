"""torch.nn.grad against torch: the input and weight gradients of conv1d/2d/3d with stride,
padding, dilation and groups, double backward through them, and the wrong-shape error."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)

CASES = [  # (dims, input shape, weight shape, conv kwargs)
    (1, (2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), {}),
    (2, (1, 4, 8, 7), (6, 2, 3, 3), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2}),
    (3, (1, 2, 5, 4, 5), (3, 2, 2, 3, 2), {"padding": 1, "stride": (1, 2, 1)}),
]


@pytest.mark.parametrize("dims,in_shape,w_shape,kwargs", CASES)
def test_input_and_weight_gradients_match_torch(dims, in_shape, w_shape, kwargs):
    x, w = RNG.standard_normal(in_shape), RNG.standard_normal(w_shape)
    conv = getattr(torch.nn.functional, f"conv{dims}d")
    g = RNG.standard_normal(tuple(conv(torch.tensor(x), torch.tensor(w), **kwargs).shape))
    ours_in = getattr(scriptc.nn.grad, f"conv{dims}d_input")(in_shape, scriptc.tensor(w), scriptc.tensor(g), **kwargs)
    theirs_in = getattr(torch.nn.grad, f"conv{dims}d_input")(in_shape, torch.tensor(w), torch.tensor(g), **kwargs)
    np.testing.assert_allclose(ours_in.numpy(), theirs_in.numpy(), rtol=1e-10, atol=1e-10)
    ours_w = getattr(scriptc.nn.grad, f"conv{dims}d_weight")(scriptc.tensor(x), w_shape, scriptc.tensor(g), **kwargs)
    theirs_w = getattr(torch.nn.grad, f"conv{dims}d_weight")(torch.tensor(x), w_shape, torch.tensor(g), **kwargs)
    np.testing.assert_allclose(ours_w.numpy(), theirs_w.numpy(), rtol=1e-10, atol=1e-10)
    assert not ours_in.requires_grad and not ours_w.requires_grad


def test_results_are_differentiable_in_the_given_tensors():
    w = RNG.standard_normal((4, 3, 3, 3))
    g = RNG.standard_normal((2, 4, 3, 3))
    results = []
    for lib in (scriptc, torch):
        wt, gt = lib.tensor(w, requires_grad=True), lib.tensor(g, requires_grad=True)
        grad_in = lib.nn.grad.conv2d_input((2, 3, 5, 5), wt, gt)
        (grad_in ** 2).sum().backward()
        results.append((wt.grad.numpy(), gt.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_grad_output_of_the_wrong_shape_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"Expected grad_output to have shape \[2, 4, 3, 3\]"):
        scriptc.nn.grad.conv2d_input((2, 3, 5, 5), scriptc.ones(4, 3, 3, 3), scriptc.ones(2, 4, 4, 3))
    with pytest.raises(TypeError, match="input_size"):
        scriptc.nn.grad.conv2d_input(scriptc.ones(4), scriptc.ones(4, 3, 3, 3), scriptc.ones(2, 4, 3, 3))
