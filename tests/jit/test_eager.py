"""The autograd path of scripted code (jit/eager.py): a module with parameters that require grad runs
its graph on Tensors, with the same container semantics as the reference interpreter."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _appends_through_a_dict(engine):
    class Appends(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.d = {"k": [4]}
            self.w = engine.nn.Parameter(engine.ones(2))  # (requires grad: the call runs on Tensors)

        def forward(self, x):
            self.d["k"].append(5)
            inner = [[x]]
            inner[0].append(x * 2)
            return str(self.d), len(inner[0]), (x * self.w).sum()

    scripted = engine.jit.script(Appends())
    x = engine.ones(2)
    first = scripted(x)
    second = scripted(x)
    return first[:2], second[:2], second[2].requires_grad


def test_a_list_read_from_a_container_is_that_list():
    assert _appends_through_a_dict(scriptc) == _appends_through_a_dict(torch)
