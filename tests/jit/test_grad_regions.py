"""`with torch.no_grad():` / `torch.enable_grad()` inside scripted code switch grad mode for their body
and put back the mode they found - on leaving normally, by return, or by an exception."""
import numpy as np
import pytest

import scriptc as torch


def _sum_without_grad(x, y):
    with torch.no_grad():
        w = x + y
    return w, x * y


def _returns_inside(x):
    with torch.no_grad():
        if bool(x.sum() > 0):
            return x * 2
    return x * 3


def _raises_inside(x):
    with torch.no_grad():
        if bool(x.sum() > 0):
            raise ValueError("positive")
    return x


def _grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            inner = x * 2
        outer = x * 3
    return inner, outer


class _IgnoredAdder(torch.nn.Module):
    @torch.jit.ignore
    def adder(self, x, y):
        return x + y

    def forward(self, x, y):
        with torch.no_grad():
            w = self.adder(x, y)
        return w


def test_no_grad_region_records_nothing_and_the_rest_does():
    x = torch.ones(3, requires_grad=True)
    w, v = torch.jit.script(_sum_without_grad)(x, torch.full((3,), 4.0))
    assert not w.requires_grad and w.grad_fn is None
    assert v.requires_grad
    assert torch.is_grad_enabled()


def test_grad_mode_is_put_back_after_a_return_or_an_exception():
    x = torch.ones(2, requires_grad=True)
    out = torch.jit.script(_returns_inside)(x)
    assert not out.requires_grad and torch.is_grad_enabled()
    with pytest.raises(Exception, match="positive"):
        torch.jit.script(_raises_inside)(x)
    assert torch.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    inner, outer = torch.jit.script(_grad_inside_no_grad)(torch.ones(2, requires_grad=True))
    assert inner.requires_grad and not outer.requires_grad


def test_ignored_python_code_runs_under_the_region():
    x = torch.ones(2, requires_grad=True)
    assert not torch.jit.script(_IgnoredAdder())(x, torch.ones(2)).requires_grad


def test_optimized_module_with_a_region_runs():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3)).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            with torch.no_grad():
                y = self.inner(x)
            return y + 1

    fast = torch.jit.optimize_for_inference(torch.jit.script(Wrapped().eval()))
    x = torch.randn(2, 3)
    np.testing.assert_allclose(fast(x).numpy(), (model(x) + 1).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert torch.is_grad_enabled()


def _scaled_by_grad_mode(x):
    if torch.is_grad_enabled():
        return x * 2
    return x * 3


def _grad_mode_with_an_argument(x):
    return x * torch.is_grad_enabled(x)


def test_is_grad_enabled_reads_the_callers_mode_in_script_and_after_load(tmp_path):
    scripted = torch.jit.script(_scaled_by_grad_mode)
    path = str(tmp_path / "m.pt")
    torch.jit.save(scripted, path)
    for fn in (scripted, torch.jit.load(path)):
        assert fn(torch.ones(1)).item() == 2.0
        with torch.no_grad():
            assert fn(torch.ones(1)).item() == 3.0
    with pytest.raises(torch.ScriptError, match="expected 0 arguments"):
        torch.jit.script(_grad_mode_with_an_argument)
