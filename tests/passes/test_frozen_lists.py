"""freeze and constant_fold on list attributes (an RNN's _flat_weights): a list the graph only reads
becomes a constant whose length, items and slices fold; one it changes stays an attribute. And
constant_fold folding again what an unrolled loop leaves."""

from __future__ import annotations

import numpy as np

from scriptc import ir
from scriptc.passes.constant_fold import constant_fold
from scriptc.passes.freeze import freeze
from scriptc.runtime import Interpreter, ModuleValue

from .filecheck import filecheck

WEIGHTS = '''graph(%self : Module, %x : Tensor):
  %w : List[Tensor] = prim::GetAttr[name="weights"](%self)
  %n : int = len.list(%w)
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %half : int = floordiv.scalar(%n, %two)
  %tail : List[Tensor] = slice.list(%w, %half, %n, %one)
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = getitem.list(%tail, %zero)
  %b : Tensor = getitem.list(%tail, %one)
  %y : Tensor = linear(%x, %a, %b)
  return (%y)
'''


def _state():
    rng = np.random.default_rng(0)
    return ModuleValue.from_flat({"weights": [rng.standard_normal(s).astype(np.float32)
                                              for s in [(3, 2), (3,), (4, 2), (4,)]]})


def test_a_list_attribute_the_graph_only_reads_is_a_constant_whose_reads_fold():
    state = _state()
    g = ir.parse(WEIGHTS)
    x = np.ones((5, 2), np.float32)
    expected = Interpreter(g.copy()).run([state, x])[0]
    assert freeze(g, state) and constant_fold(g)
    filecheck(str(g), "CHECK-NOT: GetAttr\nCHECK-NOT: len.list\nCHECK-NOT: slice.list\nCHECK-NOT: getitem.list\n"
                      "CHECK: Tensor = prim::Constant[value=array(float32, [4, 2]\nCHECK: linear(%x")
    assert str(g).startswith("graph(%x : Tensor)")  # (nothing reads self any more)
    np.testing.assert_allclose(Interpreter(g).run([x])[0], expected)


def test_a_list_attribute_the_graph_changes_stays_an_attribute():
    appended = WEIGHTS.replace("  %y : Tensor = linear(%x, %a, %b)\n",
                               "  %y : Tensor = linear(%x, %a, %b)\n  %l : List[Tensor] = append.list(%w, %y)\n")
    g = ir.parse(appended)
    freeze(g, _state())
    filecheck(str(g), 'CHECK: prim::GetAttr[name="weights"](%self)\nCHECK: len.list(%w)')
    written = WEIGHTS.replace("  %y : Tensor = linear(%x, %a, %b)\n",
                              "  %c : Tensor = mul_(%a, %two)\n  %y : Tensor = linear(%x, %c, %b)\n")
    g = ir.parse(written)
    freeze(g, _state())
    filecheck(str(g), 'CHECK: prim::GetAttr[name="weights"](%self)')


def test_constant_fold_folds_what_an_unrolled_loop_leaves():
    text = '''graph(%x : Tensor):
  %k : int = prim::Constant[value=2]()
  %t : bool = prim::Constant[value=True]()
  %zero : int = prim::Constant[value=0]()
  %r : Tensor = prim::Loop(%k, %t, %x)
    block0(%i : int, %acc : Tensor):
      %first : bool = eq.scalar(%i, %zero)
      %m : Tensor = prim::If(%first)
        block0():
          %e : Tensor = exp(%acc)
          -> (%e)
        block1():
          %s : Tensor = neg(%acc)
          -> (%s)
      -> (%t, %m)
  return (%r)
'''
    g = ir.parse(text)
    assert constant_fold(g)
    filecheck(str(g), "CHECK-NOT: prim::Loop\nCHECK-NOT: prim::If\nCHECK: exp(%x)\nCHECK: neg(")
    x = np.array([0.5, -1.0], np.float32)
    np.testing.assert_allclose(Interpreter(g).run([x])[0], -np.exp(x), rtol=1e-6)
