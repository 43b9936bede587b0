"""The error backward raises for a saved variable written in place after it was saved, in torch's words:
the tensor's type and sizes, the node whose output it now is, its version and the expected one, and the
hint (which changes with anomaly detection), against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

PROGRAMS = {
    "saved output": "b = a.exp(); b.mul_(2); b.sum().backward()",
    "saved output of sigmoid": "b = (a * 1).sigmoid(); b.add_(1); b.sum().backward()",
    "saved input, now added to": "b = a * 1; c = b * b; b.add_(1); c.sum().backward()",
    "saved input, now zeroed": "b = a * 1; c = b.pow(2); b.zero_(); c.sum().backward()",
    "double saved input": "b = (a * 1).double(); c = b * b; b.add_(1); c.sum().backward()",
}


@pytest.mark.parametrize("anomaly", [False, True], ids=["plain", "anomaly detection"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_modified_saved_variable_error_matches_torch(program, anomaly):
    def run(T):
        a = T.ones(3, requires_grad=True)
        with T.autograd.set_detect_anomaly(anomaly):
            return raised(lambda: exec(PROGRAMS[program], {"a": a}))

    ours, theirs = run(scriptc), run(torch)
    assert ours == theirs
