"""A scripted function or module that returns a tensor it was given returns that very tensor, as
torch's does (`x += y; return x` hands back the caller's x, updated in place)."""
import numpy as np

import scriptc as torch
from scriptc import nn


def _accumulate(x, y):
    x += y
    return x, y, x + y


class _Accumulates(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = nn.ModuleList([nn.ReLU(), nn.Tanh()])

    def forward(self, x):
        for step in self.steps:
            x += step(x)
        return x


def test_a_function_returns_its_updated_argument_itself():
    x, y = torch.zeros(3), torch.ones(3)
    updated, same, fresh = torch.jit.script(_accumulate)(x, y)
    assert updated is x and same is y and fresh is not x
    np.testing.assert_array_equal(x.numpy(), np.ones(3))
    np.testing.assert_array_equal(fresh.numpy(), np.full(3, 2.0))


def test_a_module_returns_its_updated_input_itself():
    model = _Accumulates()
    x = torch.randn(4)
    want = model(x.clone())
    with torch.no_grad():
        got = torch.jit.script(model)(x)
    assert got is x
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-6)


def test_a_loaded_module_updates_its_input_through_every_in_place_step(tmp_path):
    model = _Accumulates()
    scripted = torch.jit.script(model)
    torch.jit.save(scripted, tmp_path / "accumulates.sc")
    loaded = torch.jit.load(tmp_path / "accumulates.sc")
    x = torch.randn(4)
    want = model(x.clone())
    got = loaded(x)
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
