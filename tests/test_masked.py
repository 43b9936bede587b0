"""torch.masked's reductions and normalizations against torch 2.13: kept elements only, the identity (or
NaN) where a slice keeps none, broadcast masks, dims, dtype=, integer inputs and gradients."""

import math

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

_X = [[1.0, -2.0, 3.0, 0.5], [4.0, 5.0, -6.0, 2.0], [0.0, 7.0, 1.5, -1.0]]
_MASK = [[True, False, True, True], [False, False, False, False], [True, True, False, True]]

_REDUCTIONS = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "logsumexp", "var", "std"]


def _same(ours, theirs):
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy().astype(np.float64),
                               theirs.detach().numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


def _both(call):
    results = []
    for lib in (scriptc, torch):
        results.append(call(lib, lib.tensor(_X), lib.tensor(_MASK)))
    _same(*results)


@pytest.mark.parametrize("name", _REDUCTIONS)
@pytest.mark.parametrize("form", ["dim1", "dim0_keepdim", "all", "row_mask", "no_mask"])
def test_reductions_match_torch(name, form):
    def call(lib, x, mask):
        fn = getattr(lib.masked, name)
        if form == "dim1":
            return fn(x, 1, mask=mask)
        if form == "dim0_keepdim":
            return fn(x, 0, keepdim=True, mask=mask)
        if form == "row_mask":
            return fn(x, 1, mask=mask[0])
        if form == "no_mask":
            return fn(x, 1)
        if name in ("argmax", "argmin"):
            pytest.skip("torch's all-dims argmax takes no mask")
        return fn(x, mask=mask)
    _both(call)


@pytest.mark.parametrize("call", [
    lambda lib, x, m: lib.masked.median(x, 1, mask=m),
    lambda lib, x, m: lib.masked.var(x, 1, unbiased=False, mask=m),
    lambda lib, x, m: lib.masked.std(x, (0, 1), correction=0, mask=m),
    lambda lib, x, m: lib.masked.norm(x, 2.0, 1, mask=m),
    lambda lib, x, m: lib.masked.norm(x, math.inf, 1, mask=m),
    lambda lib, x, m: lib.masked.norm(x, -math.inf, 1, mask=m),
    lambda lib, x, m: lib.masked.norm(x, 0, 1, mask=m),
    lambda lib, x, m: lib.masked.softmax(x, 1, mask=m),
    lambda lib, x, m: lib.masked.log_softmax(x, 1, mask=m),
    lambda lib, x, m: lib.masked.softmin(x, 0, mask=m),
    lambda lib, x, m: lib.masked.normalize(x, 2.0, 1, mask=m),
    lambda lib, x, m: lib.masked.cumsum(x, 1, mask=m),
    lambda lib, x, m: lib.masked.cumprod(x, 0, mask=m),
    lambda lib, x, m: lib.masked.logaddexp(x, x * 2, input_mask=m, other_mask=~m),
    lambda lib, x, m: lib.masked.sum(x, 1, mask=m, dtype=lib.float64),
    lambda lib, x, m: lib.masked.softmax(x, 1, mask=m, dtype=lib.float64),
    lambda lib, x, m: lib.masked.amax(x.long(), 1, mask=m),
    lambda lib, x, m: lib.masked.amin(x.int(), 1, mask=m),
    lambda lib, x, m: lib.masked.sum(x.long(), 0, mask=m),
])
def test_other_functions_match_torch(call):
    _both(call)


@pytest.mark.parametrize("name", ["softmax", "mean", "amax", "normalize"])
def test_gradients_match_torch_and_stay_finite_on_fully_masked_rows(name):
    grads = []
    for lib in (scriptc, torch):
        x = lib.tensor(_X, requires_grad=True)
        fn = getattr(lib.masked, name)
        out = fn(x, 2.0, 1, mask=lib.tensor(_MASK)) if name == "normalize" else fn(x, 1, mask=lib.tensor(_MASK))
        (out.nan_to_num(0.0, 0.0, 0.0) * 3).sum().backward()
        grads.append(x.grad)
    _same(*grads)
    assert np.isfinite(grads[0].numpy()).all()


def test_mask_must_be_a_tensor():
    with pytest.raises(TypeError, match="mask must be a Tensor"):
        scriptc.masked.sum(scriptc.ones(2), mask=[True, False])
