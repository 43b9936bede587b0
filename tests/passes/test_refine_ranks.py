"""refine_ranks: inside the branches of a rank test (after a raise-guard on the rank), a tensor's
readers read it typed with the rank the conditions leave it, on IR text."""

from __future__ import annotations

import numpy as np

from scriptc import ir
from scriptc.ir.printer import format_attr
from scriptc.passes.refine_ranks import refine_ranks
from scriptc.passes.shape_infer import shape_infer
from scriptc.runtime import Interpreter

from .filecheck import filecheck

E = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)

GUARD = ("  = prim::If(%bad)\n    block0():\n      = prim::RaiseException[message=\"ValueError: \"]()\n"
         "      -> ()\n    block1():\n      -> ()\n")


def rank_branch_text(guard: str = GUARD) -> str:
    """An nn.LSTM's input handling on embeddings: raise unless 2-D or 3-D, unsqueeze where 2-D."""
    return ("graph(%i : Tensor(int64)):\n"
            f"  %e : Tensor(float32, [10, 3]) = prim::Constant[value={format_attr(E)}]()\n"
            "  %n : None = prim::Constant[value=None]()\n  %f : bool = prim::Constant[value=False]()\n"
            "  %x : Tensor(float32) = embedding(%i, %e, %n, %f)\n  %d : int = dim(%x)\n"
            "  %two : int = prim::Constant[value=2]()\n  %three : int = prim::Constant[value=3]()\n"
            "  %is2 : bool = eq.scalar(%d, %two)\n  %is3 : bool = eq.scalar(%d, %three)\n"
            "  %ok : bool = or.scalar(%is2, %is3)\n  %bad : bool = not.scalar(%ok)\n"
            f"{guard}"
            "  %one : int = prim::Constant[value=1]()\n  %not3 : bool = not.scalar(%is3)\n"
            "  %y : Tensor(float32) = prim::If(%not3)\n    block0():\n"
            "      %u : Tensor(float32) = unsqueeze(%x, %one)\n      -> (%u)\n    block1():\n      -> (%x)\n"
            "  %s : int = size(%y, %two)\n  return (%y, %s)\n")


def test_each_branch_reads_the_rank_the_guard_and_the_test_leave():
    g = ir.parse(rank_branch_text())
    assert refine_ranks(g)
    shape_infer(g)
    ir.verify(g)
    filecheck(str(g), "CHECK: %y : Tensor(float32, [?, ?, 3]) = prim::If(%not3)\nCHECK-NEXT: block0\n"
                      "CHECK-NEXT: Tensor(float32, [?, 3]) = prim::Refine(%x)\n"
                      "CHECK-NEXT: Tensor(float32, [?, 1, 3]) = unsqueeze(\nCHECK: block1\n"
                      "CHECK-NEXT: Tensor(float32, [?, ?, 3]) = prim::Refine(%x)")
    for idx in (np.arange(8).reshape(2, 4), np.arange(5)):
        y, s = Interpreter(g).run([idx])
        np.testing.assert_array_equal(y, E[idx] if idx.ndim == 2 else E[idx][:, None])
        assert s == 3


def test_without_the_guard_only_the_rank_the_test_fixes_is_refined():
    g = ir.parse(rank_branch_text(guard=""))
    assert refine_ranks(g)
    text = str(g)
    filecheck(text, "CHECK-COUNT-1: prim::Refine(%x)\nCHECK: block1\n"
                    "CHECK-NEXT: Tensor(float32, [?, ?, 3]) = prim::Refine(%x)")
    assert not refine_ranks(ir.parse(text.replace("not.scalar(%is3)", "not.scalar(%f)")))
