"""torch.jit._awaitable / _awaitable_wait / _awaitable_nowait and Await[T] (torch._awaits._Await),
eager and scripted, against torch 2.13."""

from __future__ import annotations

import io
from typing import List, Tuple

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _program(engine):
    Tensor = engine.Tensor
    Await = engine._awaits._Await

    def delayed(x: Tensor) -> Tuple[Tensor, List[Tensor]]:
        return 100 * x, [x * i for i in range(5)]

    def later(x: Tensor) -> Await[Tensor]:
        return engine.jit._awaitable_nowait(3 * x)

    def doubled(x: Tensor) -> Tensor:
        return 2 * x

    def scale(aw: Await[Tensor]) -> Tensor:
        return 3 * engine.jit._awaitable_wait(aw)

    def main(x: Tensor) -> Tensor:
        aw = engine.jit._awaitable(delayed, x)
        nested = engine.jit._awaitable(later, 2 * x)
        _, parts = engine.jit._awaitable_wait(aw)
        ready = engine.jit._awaitable_nowait(7)
        return parts[3] + engine.jit._awaitable_wait(engine.jit._awaitable_wait(nested)) + \
            engine.jit._awaitable_wait(ready) + scale(engine.jit._awaitable(doubled, x))

    return main


def test_awaitables_in_script_give_torchs_results_and_save():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    expected = torch.jit.script(_program(torch))(torch.from_numpy(x)).numpy()
    main = _program(scriptc)
    np.testing.assert_allclose(main(scriptc.from_numpy(x)).numpy(), expected, rtol=1e-6)
    scripted = scriptc.jit.script(main)
    np.testing.assert_allclose(scripted(scriptc.from_numpy(x)).numpy(), expected, rtol=1e-6)
    buffer = io.BytesIO()
    scriptc.jit.save(scripted, buffer)
    buffer.seek(0)
    np.testing.assert_allclose(scriptc.jit.load(buffer)(scriptc.from_numpy(x)).numpy(), expected, rtol=1e-6)


def test_an_eager_await_runs_when_waited_and_reads_through_to_its_result():
    calls = []

    def delayed(x: int) -> int:
        calls.append(x)
        return x + 13

    aw = scriptc.jit._awaitable(delayed, 13)
    assert calls == [] and aw.fn()(*aw.args()) == 26
    assert scriptc.jit._awaitable_wait(aw) == 26 and scriptc.jit._awaitable_wait(aw) == 26
    ready = scriptc.jit._awaitable_nowait(33)
    assert ready.is_nowait() and ready.args() == (33,) and scriptc.jit._awaitable_wait(ready) == 33
    lazy = scriptc.jit._awaitable(lambda t: t * 2, scriptc.ones(2, dtype=scriptc.int64))
    assert lazy.dtype == scriptc.int64


def test_an_await_a_scripted_function_returns_is_waited_in_python():
    def delayed(x):
        return 2 * (x + 1)

    def main(x):
        return scriptc.jit._awaitable(delayed, x)

    main.__annotations__["return"] = scriptc._awaits._Await[scriptc.Tensor]
    scripted = scriptc.jit.script(main)
    x = scriptc.eye(2)
    np.testing.assert_allclose(scriptc.jit._awaitable_wait(scripted(x)).numpy(), (2 * (x + 1)).numpy())


def test_isinstance_of_the_bare_await_class():
    """isinstance(aw, torch.jit._Await) is true of an Await of any type in scripted code (it was
    refused: the generic class was compiled as a script class), and eager Awaits are torch._C._Await
    (upstream test_await: await_isinstance, await_eager_lazy)."""
    def run(engine):
        Tensor = engine.Tensor

        def delayed(x: Tensor) -> Tensor:
            return 2 * (x + 1)

        def main(x: Tensor, n: int):
            aw = engine.jit._awaitable(delayed, x)
            ready = engine.jit._awaitable_nowait(n)
            return isinstance(aw, engine.jit._Await), isinstance(ready, engine.jit._Await), \
                isinstance(n, engine.jit._Await), engine.jit._awaitable_wait(aw)

        assert isinstance(engine.jit._awaitable(delayed, engine.ones(1)), engine._C._Await)
        is_await, ready_is_await, int_is_await, out = engine.jit.script(main)(engine.eye(2), 3)
        return is_await, ready_is_await, int_is_await, out.numpy()

    ours, theirs = run(scriptc), run(torch)
    assert ours[:3] == theirs[:3] == (True, True, False)
    np.testing.assert_array_equal(ours[3], theirs[3])
