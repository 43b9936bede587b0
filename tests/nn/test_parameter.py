"""Parameter and Buffer print as torch's do, through print(), str(), repr() and f-strings alike."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("make", [
    lambda T: T.nn.Parameter(T.tensor([1.0, 2.5])),
    lambda T: T.nn.Parameter(T.tensor([1.0, 2.5]), requires_grad=False),
    lambda T: T.nn.parameter.Buffer(T.tensor([1.0])),
    lambda T: T.tensor([[1.0, 2.0]], requires_grad=True),
], ids=["parameter", "frozen parameter", "buffer", "tensor"])
def test_printed_forms_match_torch(make):
    ours, theirs = make(scriptc), make(torch)
    for show in (repr, str, lambda t: f"{t}"):
        assert show(ours).replace("scriptc", "torch") == show(theirs)
