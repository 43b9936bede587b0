"""torch.jit's decorators as scriptc.jit.markers gives them: script_if_tracing."""

import numpy as np
import pytest

import scriptc


def _define(lib, decorator):
    @decorator
    def scale_by_rows_above(x, limit: float):
        n = 0
        for i in range(x.shape[0]):
            if bool(x[i].sum() > limit):
                n += 1
        return x * n

    def program(x):
        return scale_by_rows_above(x, 0.0) + 1

    return scale_by_rows_above, program


@pytest.mark.parametrize("name", ["script_if_tracing", "_script_if_tracing"])
def test_a_trace_keeps_the_loop_of_a_script_if_tracing_function(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    traced_at, called_at = rng.standard_normal((4, 3)), np.abs(rng.standard_normal((5, 3)))
    results = []
    for lib in (torch, scriptc):
        inner, program = _define(lib, getattr(lib.jit, name))
        traced = lib.jit.trace(program, lib.tensor(traced_at))
        scripted = lib.jit.script(program)
        x = lib.tensor(called_at)
        results.append([traced(x).numpy(), scripted(x).numpy(), inner(x, 0.0).numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(results[1][0], called_at * 5 + 1, rtol=1e-12)
