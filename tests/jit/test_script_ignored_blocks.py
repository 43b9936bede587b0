"""`with torch.jit._IgnoreContextManager(name="inp:<type>" | "out:<type>")` in scripted code: the
block runs in Python (code TorchScript cannot compile included), its "out" variables come back with
their declared types; eagerly the manager does nothing. Compared with torch where it is installed."""

from __future__ import annotations

from typing import List

import pytest

import scriptc as torch
from scriptc.errors import ArchiveError, ScriptError


class InputsAndOutputs(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        a: int = 4
        b: int = 5
        c: int = 0
        d: int = 6
        with torch.jit._IgnoreContextManager(
            a="inp:int", b="inp:int", x="inp:Tensor", c="out:int", d="out:int"
        ):
            squares = {i: i * i for i in range(a)}  # a dict comprehension: not TorchScript
            c = squares[a - 1] + b + int(x.sum())
            d = 9
        return c + d


class OnlyInputs(torch.nn.Module):
    def forward(self):
        a: int = 4
        with torch.jit._IgnoreContextManager(a="inp:int"):
            assert [2 + i for i in range(a) if i > 2] == [5]
        return a


class OnlyAList(torch.nn.Module):
    def forward(self):
        with torch.jit._IgnoreContextManager(c="out:List[int]"):
            c = [2 * i for i in range(7) if i > 2]
        c[0] = 3
        return c[0] + c[1]


class Tensors(torch.nn.Module):
    def forward(self, x: torch.Tensor, scale: float):
        with torch.jit._IgnoreContextManager(x="inp:Tensor", scale="inp:float", y="out:Tensor", n="out:int"):
            y = x * scale
            n = len(list(filter(lambda v: v > 0, x.tolist())))
        return y + n


@pytest.mark.parametrize("module_type", [InputsAndOutputs, OnlyInputs, OnlyAList, Tensors])
def test_ignored_block_matches_eager(module_type):
    args = {InputsAndOutputs: (torch.ones(3),), OnlyInputs: (), OnlyAList: (),
            Tensors: (torch.tensor([1.0, -2.0, 3.0]), 2.0)}[module_type]
    module = module_type()
    scripted = torch.jit.script(module)
    want, got = module(*args), scripted(*args)
    if isinstance(want, torch.Tensor):
        assert torch.equal(got, want)
    else:
        assert got == want


BLOCK_SOURCE = """
class Block(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        a: int = 3
        with torch.jit._IgnoreContextManager(a="inp:int", x="inp:torch.Tensor", r="out:List[int]"):
            r = sorted({int(v) % a for v in x.tolist()})
        return r
"""


def defined_with(module, source: str, name: str, tmp_path):
    """`name` from `source` run with `torch` standing for `module` (torch's frontend recognises the
    manager only when spelled torch.jit._IgnoreContextManager)."""
    path = tmp_path / f"{module.__name__}_{name}.py"
    path.write_text(source)
    namespace = {"torch": module, "List": List, "__name__": path.stem}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace[name]


def test_ignored_block_results_match_torch(tmp_path):
    real = pytest.importorskip("torch")
    results = [module.jit.script(defined_with(module, BLOCK_SOURCE, "Block", tmp_path)())(
        module.tensor([5.0, 7.0, 9.0, 4.0])) for module in (torch, real)]
    assert results[0] == results[1] == [0, 1, 2]


def test_ignored_block_output_has_its_declared_type():
    class Declared(torch.nn.Module):
        def forward(self):
            with torch.jit._IgnoreContextManager(c="out:List[int]"):
                c = [1, 2]
            return c

    graph = str(torch.jit.script(Declared()).graph)
    assert "List[int] = prim::Call" in graph


@pytest.mark.parametrize("keyword, message", [
    ('a="int"', "must be a string 'inp:<type>' or 'out:<type>'"),
    ('a="inp:"', "must be a string 'inp:<type>' or 'out:<type>'"),
    ('zz="inp:int"', "undefined value zz"),
])
def test_ignored_block_bad_declarations_are_script_errors(tmp_path, keyword, message):
    source = f"""
def bad() -> int:
    a: int = 1
    with torch.jit._IgnoreContextManager({keyword}):
        a = 2
    return a
"""
    with pytest.raises(ScriptError, match=message):
        torch.jit.script(defined_with(torch, source, "bad", tmp_path))


def test_ignore_context_manager_does_nothing_eagerly():
    with torch.jit._IgnoreContextManager(a="inp:int", b="out:int") as manager:
        b = 2
    assert b == 2 and isinstance(manager, torch.jit._IgnoreContextManager)


def test_module_with_ignored_block_cannot_be_saved(tmp_path):
    with pytest.raises(ArchiveError, match="cannot save"):
        torch.jit.save(torch.jit.script(OnlyAList()), tmp_path / "ignored_block.pt")
