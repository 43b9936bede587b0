"""Helpers for the optimizer tests: the same parameters and optimizer in torch and in scriptc."""

from __future__ import annotations

import numpy as np

import scriptc

SHAPES = [(4, 5), (5,)]


def to_numpy(value):
    """A (torch or scriptc) state dict with every tensor replaced by a numpy copy."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.array(value.detach().numpy(), copy=True)
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(v) for v in value)
    return value


class Pair:
    """Parameters with equal values in torch and scriptc, fed equal gradients step by step."""

    def __init__(self, torch, rng, dtype=np.float32, shapes=SHAPES):
        self.torch, self.rng, self.dtype = torch, rng, dtype
        initial = [rng.standard_normal(s).astype(dtype) for s in shapes]
        self.torch_params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in initial]
        self.params = [scriptc.nn.Parameter(scriptc.from_numpy(a.copy())) for a in initial]

    def set_grads(self):
        for pt, ps in zip(self.torch_params, self.params):
            g = self.rng.standard_normal(ps.shape).astype(self.dtype)
            pt.grad = self.torch.from_numpy(g.copy())
            ps.grad = scriptc.from_numpy(g.copy())

    def steps(self, torch_opt, opt, n):
        for _ in range(n):
            self.set_grads()
            torch_opt.step()
            opt.step()

    def assert_close(self, rtol, atol=0.0):
        for pt, ps in zip(self.torch_params, self.params):
            np.testing.assert_allclose(ps.detach().numpy(), pt.detach().numpy(), rtol=rtol, atol=atol)
