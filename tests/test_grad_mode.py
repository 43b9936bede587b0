"""Grad modes: set_grad_enabled, no_grad, enable_grad and inference_mode as functions, context
managers and decorators, as torch defines them."""

from __future__ import annotations

import threading

import pytest

import scriptc as torch


def test_set_grad_enabled_as_function_context_manager_and_decorator():
    x = torch.ones(2, requires_grad=True)
    torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with torch.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def doubled(t):
        return t * 2

    assert torch.is_grad_enabled(), "decorating leaves the mode as it was"
    assert not doubled(x).requires_grad and torch.is_grad_enabled()
    assert repr(torch.set_grad_enabled(True)) == "torch.autograd.grad_mode.set_grad_enabled(mode=True)"


@pytest.mark.parametrize("mode", [torch.no_grad, torch.enable_grad, torch.inference_mode])
def test_bare_and_called_decorators(mode):
    x = torch.ones(2, requires_grad=True)
    expect_grad = mode is torch.enable_grad

    @mode
    def bare(t):
        return t * 2

    @mode()
    def called(t):
        return t * 2

    with torch.no_grad() if expect_grad else torch.enable_grad():
        assert bare(x).requires_grad is expect_grad
        assert called(x).requires_grad is expect_grad
    assert bare.__name__ == "bare"


def test_decorated_generator_runs_each_step_under_the_mode():
    x = torch.ones(1, requires_grad=True)

    @torch.no_grad()
    def steps():
        for _ in range(2):
            received = yield (x * 2).requires_grad
            assert received == "go"

    gen = steps()
    assert next(gen) is False
    assert torch.is_grad_enabled(), "the mode does not leak out between steps"
    assert gen.send("go") is False
    with pytest.raises(StopIteration):
        gen.send("go")


def test_decorating_a_class_is_refused():
    with pytest.raises(RuntimeError, match="Cannot decorate classes"):
        torch.no_grad()(type("Model", (), {}))


def test_inference_mode_makes_inference_tensors():
    x = torch.ones(3, requires_grad=True)
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() and not torch.is_grad_enabled()
        y = x * 2
        z = torch.tensor([1.0, 2.0])
        view = y[1:]
    assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
    assert y.is_inference() and z.is_inference() and view.is_inference()
    assert not y.requires_grad and not x.is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        y.add_(1)
    with torch.inference_mode():
        y.add_(1)  # allowed inside
    assert y.tolist() == [3.0, 3.0, 3.0]
    assert not y.clone().is_inference()


def test_inference_mode_false_turns_it_off_inside():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        with torch.inference_mode(mode=False):
            assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
            y = x * 2
        assert torch.is_inference_mode_enabled()
    assert y.requires_grad and not y.is_inference()


def test_modes_are_thread_local():
    seen = []
    with torch.no_grad(), torch.inference_mode():
        worker = threading.Thread(target=lambda: seen.append((torch.is_grad_enabled(),
                                                              torch.is_inference_mode_enabled())))
        worker.start()
        worker.join()
    assert seen == [(True, False)]


def test_autograd_namespace_exports_the_modes():
    assert torch.autograd.inference_mode is torch.inference_mode
    assert torch.autograd.set_grad_enabled is torch.set_grad_enabled
