"""Calling what optimize_for_inference returns (jit/compiled_modules.OptimizedModule): every way a Python call
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


class _Positions(torch.nn.Module):
    """Token plus position embeddings, the positions sized by the input (nanoGPT, FSDP2's toy model)."""

    def __init__(self):
        super().__init__()
        self.tokens = torch.nn.Embedding(10, 4)
        self.positions = torch.nn.Embedding(16, 4)

    def forward(self, t):
        return self.tokens(t) + self.positions(torch.arange(0, t.size(1)))


class _Flattened(_Positions):
    """The positions' rows flattened to a fixed width: only 8 tokens fit."""

    def forward(self, t):
        return super().forward(t).view(t.size(0), 32)


def test_positions_sized_by_the_input_follow_its_length():
    torch.manual_seed(0)
    model = _Positions().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.zeros(2, 8, dtype=torch.long)))
    with torch.no_grad():
        for shape in ((3, 8), (3, 5), (1, 16)):
            tokens = torch.randint(0, 10, shape)
            np.testing.assert_allclose(fast(tokens).numpy(), model(tokens).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="index out of range"):
        fast(torch.zeros(3, 17, dtype=torch.long))  # (more positions than the table has: as torch.jit, not IndexError)


def test_an_input_outside_the_traced_dims_is_named_not_failed_inside():
    """The trace fixes dim 1 at 8 and the optimized graph reads it as a constant: a call at 5 raises
    runtime.load's SignatureError for that input (from the failure inside), at 8 any batch runs."""
    torch.manual_seed(0)
    model = _Flattened().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.zeros(2, 8, dtype=torch.long)))
    tokens = torch.randint(0, 10, (3, 8))
    with torch.no_grad():
        np.testing.assert_allclose(fast(tokens).numpy(), model(tokens).numpy(), rtol=1e-6)
        with pytest.raises(torch.SignatureError, match=r"input 't' expects Tensor\(int64, \[B, 8\]\).*shape \[3, 5\]") \
                as raised:
            fast(torch.zeros(3, 5, dtype=torch.long))
    assert raised.value.__cause__ is not None
    with pytest.raises(RuntimeError, match="index out of range"):
        fast(torch.full((3, 8), 12))
