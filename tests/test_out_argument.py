"""torch's out= on the generated functions (torch.add(x, y, out=result)), against torch."""

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _both(values):
    return scriptc.from_numpy(values.copy()), torch.from_numpy(values.copy())


@pytest.mark.parametrize("call", [
    lambda lib, a, b: lib.add(a, b, out=lib.empty(3, 4)),
    lambda lib, a, b: lib.add(a, b, alpha=2, out=lib.empty(3, 4)),
    lambda lib, a, b: lib.mul(a, b, out=lib.empty(3, 4)),
    lambda lib, a, b: lib.matmul(a, b.T, out=lib.empty(0)),
    lambda lib, a, b: lib.max(a, b, out=lib.empty(3, 4)),
    lambda lib, a, b: lib.sum(a, 1, out=lib.empty(3)),
    lambda lib, a, b: lib.cat([a, b], 0, out=lib.empty(6, 4)),
    lambda lib, a, b: lib.tanh(a, out=lib.empty(3, 4, dtype=lib.float64)),
    lambda lib, a, b: lib.zeros(2, 3, out=lib.empty(0)),
    lambda lib, a, b: lib.arange(4, out=lib.empty(4, dtype=lib.int64)),
])
def test_out_receives_and_is_the_result(call):
    values = np.random.randn(2, 3, 4).astype(np.float32)
    (sa, ta), (sb, tb) = _both(values[0]), _both(values[1])
    ours, theirs = call(scriptc, sa, sb), call(torch, ta, tb)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_the_same_tensor_comes_back_and_views_of_it_see_the_values():
    base = scriptc.zeros(2, 3)
    out = base[1]
    result = scriptc.add(scriptc.ones(3), 2, out=out)
    assert result is out
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0], [3, 3, 3]])


def test_an_out_of_another_shape_is_resized_with_torchs_warning_when_it_had_elements():
    for lib in (scriptc, torch):
        out = lib.empty(2)
        with pytest.warns(UserWarning, match=r"had shape \[2\], which does not match the required output shape \[3\]"):
            lib.add(lib.ones(3), 1, out=out)
        assert tuple(out.shape) == (3,)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.add(lib.ones(3), 1, out=lib.empty(0))


def test_torchs_errors():
    for lib in (scriptc, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            lib.add(lib.ones(3), 1, out=lib.empty(3, dtype=lib.long))
        with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't support automatic "
                                               "differentiation, but one of the arguments requires grad."):
            lib.add(lib.ones(3, requires_grad=True), 1, out=lib.empty(3))
        with pytest.raises(TypeError, match=r"add\(\): argument 'out' must be Tensor, not list"):
            lib.add(lib.ones(3), 1, out=[1])
        with pytest.raises(TypeError):
            lib.ones(3).add(1, out=lib.empty(3))
        with lib.no_grad():
            out = lib.add(lib.ones(3, requires_grad=True), 1, out=lib.empty(3))
        assert not out.requires_grad
