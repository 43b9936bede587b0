"""torch.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _inputs(lib):
    rng = np.random.default_rng(4)
    return lib.tensor(rng.standard_normal((2, 3))), lib.tensor(rng.standard_normal(3))


def _pair_function(x, y):
    return (x * y).tanh().sum(0) + y.exp(), (x ** 2).sum()


def _scalar_function(x, y):
    return ((x @ y).sigmoid() * y.sum()).sum()


def _numpy(value):
    if isinstance(value, tuple):
        return tuple(_numpy(v) for v in value)
    return value.detach().numpy()


def _compare(ours, expected):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _compare(a, b)
        return
    np.testing.assert_allclose(ours, expected, rtol=1e-7, atol=1e-9)


CALLS = {
    "jacobian tuple": lambda lib, F: F.jacobian(_pair_function, _inputs(lib)),
    "jacobian single": lambda lib, F: F.jacobian(lambda x: x.sin() * 2, _inputs(lib)[0]),
    "hessian": lambda lib, F: F.hessian(_scalar_function, _inputs(lib)),
    "vjp": lambda lib, F: F.vjp(_pair_function, _inputs(lib), (lib.ones(3, dtype=lib.float64),
                                                              lib.tensor(2.0, dtype=lib.float64))),
    "jvp": lambda lib, F: F.jvp(_pair_function, _inputs(lib), tuple(t * 0 + 0.5 for t in _inputs(lib))),
    "vhp": lambda lib, F: F.vhp(_scalar_function, _inputs(lib), tuple(t.cos() for t in _inputs(lib))),
    "hvp": lambda lib, F: F.hvp(_scalar_function, _inputs(lib), tuple(t.cos() for t in _inputs(lib))),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_torch(name):
    expected = _numpy(CALLS[name](torch, torch.autograd.functional))
    ours = _numpy(CALLS[name](scriptc, scriptc.autograd.functional))
    _compare(ours, expected)


def test_create_graph_keeps_results_differentiable():
    results = []
    for lib in (torch, scriptc):
        x = lib.tensor([0.3, -0.7], dtype=lib.float64, requires_grad=True)
        jac = lib.autograd.functional.jacobian(lambda v: v.sin() * v.sum(), x, create_graph=True)
        jac.sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10)


def test_strict_and_argument_errors_worded_as_torch():
    for lib in (torch, scriptc):
        F = lib.autograd.functional
        x = lib.ones(2, dtype=lib.float64)
        with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1. "
                                               "This is not allowed in strict mode."):
            F.vjp(lambda a, b: a * 2, (x, x), lib.ones(2, dtype=lib.float64), strict=True)
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
            F.vjp(lambda v: lib.ones(2, dtype=lib.float64), x, lib.ones(2, dtype=lib.float64), strict=True)
        with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a tuple of Tensors"):
            F.vjp(lambda v: v, [x])
        with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hessian should contain "
                                               "a single element"):
            F.hessian(lambda v: v * 2, x)
        np.testing.assert_array_equal(_numpy(F.jacobian(lambda v: lib.ones(2, dtype=lib.float64), x)), np.zeros((2, 2)))


@pytest.mark.parametrize("name", ["hessian", "vhp", "hvp"])
def test_single_output_functions_reject_a_tuple_as_torch(name):
    for lib in (torch, scriptc):
        F = getattr(lib.autograd.functional, name)
        args = () if name == "hessian" else (lib.ones(2, dtype=lib.float64),)
        with pytest.raises(RuntimeError, match=f"The function given to {name} should return a single Tensor"):
            F(lambda v: ((v ** 3).sum(),), lib.ones(2, dtype=lib.float64), *args)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_hessian_products_return_the_output_in_its_own_shape(name):
    shapes = []
    for lib in (torch, scriptc):
        F = getattr(lib.autograd.functional, name)
        out, product = F(lambda v: (v ** 3).sum().reshape(1, 1), lib.ones(2, dtype=lib.float64),
                         lib.ones(2, dtype=lib.float64))
        shapes.append((tuple(out.shape), tuple(product.shape)))
    assert shapes[1] == shapes[0] == ((1, 1), (2,))


def test_vector_v_errors_worded_as_torch():
    for lib in (torch, scriptc):
        F = lib.autograd.functional
        x = lib.ones(2, dtype=lib.float64)
        with pytest.raises(RuntimeError, match=r"^v has invalid size: should be \w+\.Size\(\[2\]\) but got "
                                               r"\w+\.Size\(\[3\]\)\.$"):
            F.vjp(lambda v: v * 2, x, lib.ones(3, dtype=lib.float64))
        with pytest.raises(RuntimeError, match=r"^Entry 1 in v has invalid size: should be \w+\.Size\(\[2\]\) but "
                                               r"got \w+\.Size\(\[1\]\)\.$"):
            F.jvp(lambda a, b: a * b, (x, x), (x, lib.ones(1, dtype=lib.float64)))
        with pytest.raises(RuntimeError, match="^The given v should contain a single Tensor.$"):
            F.vjp(lambda v: v * 2, x, (x, x))
        with pytest.raises(RuntimeError, match="^v is a tuple of invalid length: should be 2 but got 1.$"):
            F.vhp(lambda a, b: (a * b).sum(), (x, x), (x,))


@pytest.mark.parametrize("name", ["hessian", "vhp", "hvp"])
def test_strict_second_order_names_the_independent_jacobian_as_torch(name):
    for lib in (torch, scriptc):
        F = getattr(lib.autograd.functional, name)
        x = lib.ones(2, dtype=lib.float64)
        pair = (x, x)
        args = () if name == "hessian" else (pair,)
        with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian of the "
                                               "user-provided function with respect to input 0 is independent of "
                                               r"the input\. This is not allowed in strict mode\."):
            F(lambda a, b: (a + b.sin()).sum(), pair, *args, strict=True)


def test_jacobian_option_errors_as_torch():
    for lib in (torch, scriptc):
        F = lib.autograd.functional
        x = lib.ones(2, dtype=lib.float64)
        with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode". '
                                                 "Hint: If your"):
            F.jacobian(lib.exp, x, strategy="central")
        with pytest.raises(AssertionError, match=r'^Expected strategy to be either "forward-mode" or "reverse-mode"\.$'):
            F.hessian(lib.sum, x, outer_jacobian_strategy="central")
        with pytest.raises(NotImplementedError, match=r"`create_graph=True` and `strategy=\"forward-mode\"` are not "
                                                      "supported together"):
            F.jacobian(lib.exp, x, create_graph=True, vectorize=True, strategy="forward-mode")
        with pytest.raises(RuntimeError, match=r"`strict=True` and `strategy=\"forward-mode\"` are not supported "
                                               "together"):
            F.jacobian(lib.exp, x, strict=True, vectorize=True, strategy="forward-mode")
        with pytest.raises(NotImplementedError, match="Computing Jacobian using forward-AD or forward-over-reverse "
                                                      "Hessian isonly implemented for `vectorize=True`."):
            F.jacobian(lib.exp, x, strategy="forward-mode")
        with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
            F.jacobian(lib.exp, x, strict=True, vectorize=True)
        with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
            F.hessian(lambda v: (v ** 3).sum(), x, strict=True, vectorize=True)


def test_strict_jacobian_names_the_output_and_the_unused_input_as_torch():
    for lib in (torch, scriptc):
        x = lib.ones(2, dtype=lib.float64)
        with pytest.raises(RuntimeError, match=r"^Output 1 of the user-provided function is independent of input 0\. "
                                               r"This is not allowed in strict mode\.$"):
            lib.autograd.functional.jacobian(lambda a, b: (a * b, b.exp()), (x, x), strict=True)
