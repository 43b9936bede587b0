"""Layers built with a negative size raise torch's RuntimeError (checked against torch 2.13)."""

from __future__ import annotations

import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("build", [
    lambda nn: nn.Linear(-1, 3),
    lambda nn: nn.Linear(3, -2),
    lambda nn: nn.Embedding(-1, 3),
    lambda nn: nn.LayerNorm(-1),
    lambda nn: nn.BatchNorm2d(-1),
])
def test_a_negative_size_raises_torchs_error(build):
    expected = raised(lambda: build(torch.nn))
    assert expected is not None and expected[0] is RuntimeError
    assert raised(lambda: build(scriptc.nn)) == expected
