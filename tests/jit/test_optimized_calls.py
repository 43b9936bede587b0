"""Calling what optimize_for_inference returns (jit/module.OptimizedModule): every way a Python call
may pass arguments binds as the module's own forward binds them - a call giving all of them
positionally skips Signature.bind, any other goes through it."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x, scale: float = 2.0):
        return self.linear(x) * scale


def test_positional_keyword_and_default_arguments_bind_as_forward_binds_them():
    torch.manual_seed(0)
    model = _Scaled().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.script(model))
    x = torch.randn(5, 4)
    with torch.no_grad():
        for args, kwargs in (((x,), {}), ((x, 3.0), {}), ((x,), {"scale": 3.0}), ((), {"x": x, "scale": 0.5})):
            np.testing.assert_allclose(fast(*args, **kwargs).numpy(), model(*args, **kwargs).numpy(), rtol=1e-6)
        np.testing.assert_allclose(fast.forward(x, scale=3.0).numpy(), model.forward(x, 3.0).numpy(), rtol=1e-6)
        with pytest.raises(RuntimeError):
            fast()
        with pytest.raises(RuntimeError):
            fast(x, 1.0, 2.0)
        with pytest.raises(RuntimeError):
            fast(x, size=1.0)


@pytest.mark.parametrize("make", [torch.jit.script, lambda m: torch.jit.trace(m, torch.randn(2, 4))])
def test_optimize_for_inference_takes_a_frozen_module(make, tmp_path):
    """torch.jit.optimize_for_inference(torch.jit.freeze(m)) is the usual call: it optimizes the frozen
    graph, runs as the module does, and saves."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    frozen = torch.jit.freeze(make(model))
    fast = torch.jit.optimize_for_inference(frozen)
    assert "FusionGroup" in str(fast.graph)
    x = torch.randn(7, 4)
    with torch.no_grad():
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(torch.jit.freeze(frozen)(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
        fast.save(tmp_path / "m.sc")
        np.testing.assert_allclose(torch.jit.load(tmp_path / "m.sc")(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
