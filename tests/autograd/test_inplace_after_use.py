"""An in-place write to a tensor an op read, after the op: an error exactly where torch's is (torch saves
mul's self only when other needs a gradient, a product's operand only for the other's gradient), the
gradients torch gives where it is not (the differentiable-physics example's `velocities[0] = ...`)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(9)
A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))

PROGRAMS = {
    "mul by a number": lambda T, a, b: a * 0.5,
    "mul by a constant tensor": lambda T, a, b: a * b.detach(),
    "div by a constant tensor": lambda T, a, b: a / (b.detach() + 5),
    "matmul by a constant": lambda T, a, b: a @ b.detach(),
    "mm by a constant": lambda T, a, b: T.mm(b.detach(), a),
    "linear with a constant weight": lambda T, a, b: T.nn.functional.linear(a, b.detach()),
    "mul by a tensor needing grad": lambda T, a, b: a * b,
    "matmul by a tensor needing grad": lambda T, a, b: a @ b,
    "constant divided by the tensor": lambda T, a, b: b.detach() / (a + 5),
    "constant divided by it": lambda T, a, b: b.detach() / a,
}
REFUSED_BY_TORCH = {"mul by a tensor needing grad", "matmul by a tensor needing grad", "constant divided by it"}


def run(T, program):
    a0, b = T.tensor(A, requires_grad=True), T.tensor(B, requires_grad=True)
    a = a0 * 1.0
    used = program(T, a, b)
    a[0] = 0.0  # written after `used` read it
    try:
        (used.sum() + a.sum()).backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        return "refused"
    return [t.grad.numpy() for t in (a0, b) if t.grad is not None]


@pytest.mark.parametrize("name", PROGRAMS)
def test_an_inplace_write_after_use_is_refused_only_where_torch_refuses(name):
    ours, theirs = run(scriptc, PROGRAMS[name]), run(torch, PROGRAMS[name])
    assert (theirs == "refused") == (name in REFUSED_BY_TORCH)
    if theirs == "refused" or ours == "refused":
        assert ours == theirs
    else:
        assert len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(mine, reference, rtol=1e-12)
