"""`with obj:` in scripted code against torch 2.13: __exit__ runs when the body finishes, returns,
breaks, and when it raises (the body's exception goes on); the prim::With region in the interpreter,
the executor of a saved archive, the IR text and `.code`."""

from __future__ import annotations

from typing import Any

import pytest

import scriptc
from scriptc.ir.parser import parse
from scriptc.ir.printer import print_graph

torch = pytest.importorskip("torch")


def _context_class(engine):
    """A context manager that adds 1 to a shared tensor on entering and takes it off on exiting; an
    __exit__ told to fail (a negative count) raises, which torch ignores while an exception is on its way."""

    @engine.jit.script
    class Counted:
        def __init__(self, count):
            # type: (Tensor) -> None
            self.count = count

        def __enter__(self):
            self.count.add_(1.0)
            return self.count

        def __exit__(self, kind: Any, value: Any, traceback: Any):
            self.count.sub_(1.0)
            if bool(self.count.sum() < 0):
                raise RuntimeError("exit failed")

    return Counted


def _functions(engine):
    Counted = _context_class(engine)

    @engine.jit.script
    def fails():
        # type: () -> Tensor
        raise Exception("raised exception")

    @engine.jit.script
    def raising_body(x, count):
        # type: (Tensor, Tensor) -> Tensor
        with Counted(count) as _:
            x = fails()
        return x

    @engine.jit.script
    def nested(x, count):
        # type: (Tensor, Tensor) -> Tensor
        c = Counted(count)
        with c as a, Counted(count) as b:
            with c:
                x = x + a + b + fails()
        return x

    @engine.jit.script
    def leaves(x, count, steps):
        # type: (Tensor, Tensor, List[int]) -> Tensor
        with Counted(count) as n:
            y = x + n
            for step in steps:
                if step == 0:
                    break
                if step < 0:
                    raise ValueError("negative step")
                y = y * step
        return y + count

    @engine.jit.script
    def exit_raises_too(x, count):
        # type: (Tensor, Tensor) -> Tensor
        count.sub_(5.0)  # __exit__ will raise: the caller sees the body's exception
        with Counted(count):
            x = fails()
        return x

    return raising_body, nested, leaves, exit_raises_too


def _outcome(fn, engine, *args):
    count = engine.zeros(1)
    try:
        result = fn(engine.ones(2), count, *args)
    except Exception as error:
        return "raised", str(error).splitlines()[-1].split(": ")[-1], float(count[0])
    return "returned", [float(v) for v in result], float(count[0])


@pytest.mark.parametrize("index, args", [(0, ()), (1, ()), (2, ([2, 3],)), (2, ([2, 0, 5],)), (2, ([2, -1],)),
                                         (3, ())])
def test_exit_runs_however_the_body_ends(index, args):
    ours, theirs = _functions(scriptc)[index], _functions(torch)[index]
    assert _outcome(ours, scriptc, *args) == _outcome(theirs, torch, *args)


_Counted = _context_class(scriptc)


class _Guarded(scriptc.nn.Module):
    def forward(self, x: scriptc.Tensor, count: scriptc.Tensor):
        with _Counted(count) as n:
            if bool(x.sum() < 0):
                raise ValueError("negative")
            y = x * n
        return y


def test_a_saved_module_runs_exit_when_its_body_raises(tmp_path):
    module = scriptc.jit.script(_Guarded())
    scriptc.jit.save(module, str(tmp_path / "guarded.pt"))
    loaded = scriptc.runtime.load(str(tmp_path / "guarded.pt"))
    for fn in (module, loaded):
        count = scriptc.zeros(1)
        assert [float(v) for v in fn(scriptc.ones(2), count)] == [1.0, 1.0]
        with pytest.raises(Exception, match="negative"):
            fn(-scriptc.ones(2), count)
        assert float(count[0]) == 0.0


def test_the_with_region_prints_and_parses_back():
    graph = scriptc.jit.script(_Guarded()).graph
    text = print_graph(graph)
    assert "prim::With" in text
    assert print_graph(parse(text)) == text
    code = scriptc.jit.script(_Guarded()).code
    assert "try:" in code and "finally:" in code and "__exit__" in code
