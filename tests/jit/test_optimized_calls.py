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
        with pytest.raises(TypeError):
            fast()
        with pytest.raises(TypeError):
            fast(x, 1.0, 2.0)
        with pytest.raises(TypeError):
            fast(x, size=1.0)
