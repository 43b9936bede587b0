"""gradcheck / gradgradcheck take what torch's take: one tensor or a tuple, leaves or not."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    return Square


def _wrong_square(lib):
    class WrongSquare(_square(lib)):
        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 3 * x

    return WrongSquare


def _input(lib, values, leaf: bool):
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    return x if leaf else x.clone()


@pytest.mark.parametrize("leaf", [True, False])
@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
def test_one_tensor_as_inputs_leaf_or_not(check, leaf):
    values = np.random.rand(3, 3).tolist()
    for lib in (scriptc, torch):
        x = _input(lib, values, leaf)
        assert getattr(lib.autograd, check)(_square(lib).apply, x)
        if check == "gradcheck":  # (gradgradcheck differentiates the first gradient, wrong or not)
            assert lib.autograd.gradcheck(_wrong_square(lib).apply, (x,), raise_exception=False) is False


def test_a_non_leaf_input_is_checked_and_grads_stay_untouched():
    for lib in (scriptc, torch):
        leaf = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        x = leaf * 1.0
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradcheck(_wrong_square(lib).apply, x)
        assert leaf.grad is None


def test_grad_outputs_may_be_one_tensor():
    for lib in (scriptc, torch):
        x = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        v = lib.tensor([1.0, -1.0], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradgradcheck(lambda t: t ** 3, x, v)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_fast_mode_and_nondet_tol_are_taken_and_a_wrong_gradient_still_fails(fast_mode):
    values = np.random.rand(2, 3).tolist()
    for lib in (scriptc, torch):
        x = _input(lib, values, leaf=True)
        assert lib.autograd.gradcheck(_square(lib).apply, (x,), fast_mode=fast_mode, nondet_tol=0.0)
        assert lib.autograd.gradgradcheck(_square(lib).apply, (x,), fast_mode=fast_mode)
        assert lib.autograd.gradcheck(_wrong_square(lib).apply, (x,), fast_mode=fast_mode,
                                      raise_exception=False) is False


def _exp_with_jvp(lib, wrong: bool):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.result = x.exp()
            return ctx.result

        @staticmethod
        def jvp(ctx, tangent):
            return tangent * ctx.result * (2 if wrong else 1)

    return Exp


def test_forward_mode_gradcheck_checks_a_functions_jvp_without_a_backward():
    x = np.random.default_rng(2).standard_normal((2, 3))
    for lib in (scriptc, torch):
        checks = dict(check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
                      check_batched_grad=False)
        primal = lib.tensor(x, requires_grad=True)
        assert lib.autograd.gradcheck(_exp_with_jvp(lib, False).apply, (primal,), **checks)
        with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch"):
            lib.autograd.gradcheck(_exp_with_jvp(lib, True).apply, (primal,), **checks)
        assert not lib.autograd.gradcheck(_exp_with_jvp(lib, True).apply, (primal,), raise_exception=False,
                                          **checks)


def test_forward_and_reverse_mode_gradcheck_of_ops():
    x = scriptc.tensor(np.random.default_rng(4).standard_normal((3, 2)), requires_grad=True)
    assert scriptc.autograd.gradcheck(lambda t: (t.sin() * t).sum(1), (x,), check_forward_ad=True)


@pytest.mark.parametrize("flags, message", [
    (dict(check_backward_ad=False), "Expected at least one of check_forward_ad or check_backward_ad to be True"),
    (dict(check_backward_ad=False, check_forward_ad=True, check_batched_grad=True),
     "Setting check_batched_grad=True requires check_backward_ad to be True"),
    (dict(check_batched_forward_grad=True), "Setting check_batched_forward_grad=True requires check_forward_ad"),
])
def test_flags_that_would_check_nothing_are_refused_as_torch_refuses_them(flags, message):
    for lib in (scriptc, torch):
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(AssertionError, match=message):
            lib.autograd.gradcheck(lambda t: t * 2, (x,), **flags)
