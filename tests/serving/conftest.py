"""The serving tests' model: the MLP of tests/models.py, traced and saved once per module."""

from __future__ import annotations

import pytest

import scriptc as torch

from ..models import MLP


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("serving") / "mlp.sc"
    torch.jit.trace(MLP().eval(), torch.randn(3, 16)).save(path)
    return path
