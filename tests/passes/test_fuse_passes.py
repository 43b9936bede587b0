"""The fusion passes (fuse, transpose_frozen_linear) on IR text before and after, including the cases where
they must not fire."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc import ir
from scriptc.ir.printer import format_attr
from scriptc.passes.dce import dce
from scriptc.passes.fuse import fuse
from scriptc.passes.transpose_frozen_linear import transpose_frozen_linear
from scriptc.runtime import Interpreter

from .filecheck import filecheck
from .test_passes import F, run


def test_fuse_groups_a_chain_and_never_creates_a_cycle():
    text = (f'graph(%x : {F}):\n  %a : {F} = exp(%x)\n  %b : {F} = neg(%a)\n'
            '  %zero : int = prim::Constant[value=0]()\n  %s : int = size(%b, %zero)\n'
            f'  %c : {F} = mul(%b, %s)\n  %d : {F} = tanh(%c)\n  return (%d)\n')
    g, changed = run(fuse, text)
    assert changed
    # size() reads %b between neg and mul, so exp+neg form one group and mul+tanh another.
    filecheck(str(g), "CHECK: prim::FusionGroup\nCHECK: exp(\nCHECK: neg(\nCHECK: size(\n"
                      "CHECK: prim::FusionGroup\nCHECK: mul(\nCHECK: tanh(")


def test_fuse_merges_the_chains_a_node_joins():
    # 0.5 * x * (1 + tanh(x)): the left product and the tanh chain are separate groups until the
    # final mul reads both; one kernel, not two with an intermediate through memory.
    text = (f'graph(%x : {F}):\n  %half : float = prim::Constant[value=0.5]()\n'
            '  %one : int = prim::Constant[value=1]()\n'
            f'  %l : {F} = mul(%x, %half)\n  %t : {F} = tanh(%x)\n  %u : {F} = add(%t, %one, %one)\n'
            f'  %y : {F} = mul(%l, %u)\n  return (%y)\n')
    g, changed = run(fuse, text)
    assert changed and sum(1 for n in g.nodes() if n.op == "prim::FusionGroup") == 1
    filecheck(str(g), "CHECK: prim::FusionGroup\nCHECK: mul(\nCHECK: tanh(\nCHECK: add(\nCHECK: mul(\n"
                      "CHECK-NOT: prim::FusionGroup")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(Interpreter(g).run([x])[0], 0.5 * x * (1 + np.tanh(x)), rtol=1e-6)


def test_fuse_merges_no_chain_that_another_node_reads_first():
    # size() reads the left chain before the final mul, so it cannot move down into one kernel with it.
    text = (f'graph(%x : {F}):\n  %zero : int = prim::Constant[value=0]()\n  %one : int = prim::Constant[value=1]()\n'
            f'  %a : {F} = exp(%x)\n  %b : {F} = neg(%a)\n  %s : int = size(%b, %zero)\n'
            f'  %t : {F} = tanh(%x)\n  %u : {F} = add(%t, %one, %one)\n  %y : {F} = mul(%b, %u)\n'
            f'  %z : {F} = mul(%y, %s)\n  return (%z)\n')
    g, _ = run(fuse, text)
    filecheck(str(g), "CHECK: prim::FusionGroup\nCHECK: exp(\nCHECK: neg(\nCHECK: size(\n"
                      "CHECK: prim::FusionGroup\nCHECK: tanh(")


def test_fuse_respects_dtypes_and_unknown_shapes():
    text = ('graph(%x : Tensor(float32, [4]), %y : Tensor):\n  %a : Tensor(float32, [4]) = exp(%x)\n'
            '  %d : ScalarType = prim::Constant[value=float64]()\n'
            '  %b : Tensor(float64, [4]) = to.dtype(%a, %d)\n  %c : Tensor(float64, [4]) = neg(%b)\n'
            '  %e : Tensor = neg(%y)\n  %f : Tensor = exp(%e)\n  return (%c, %f)\n')
    g, _ = run(fuse, text)
    assert "FusionGroup" not in str(g).split("%e")[1]  # unknown shapes are not fused


def test_fusion_group_guard_records_dtype_rank_and_broadcast_dims():
    text = ('graph(%x : Tensor(float32, [B, 4]), %b : Tensor(float32, [1, 4])):\n'
            '  %one : int = prim::Constant[value=1]()\n  %a : Tensor(float32, [B, 4]) = add(%x, %b, %one)\n'
            '  %r : Tensor(float32, [B, 4]) = relu(%a)\n  return (%r)\n')
    g, _ = run(fuse, text)
    group = next(n for n in g.nodes() if n.op == "prim::FusionGroup")
    assert group.attrs["guard"] == [["float32", 2, []], ["float32", 2, [0]]]


def test_transpose_frozen_linear_stores_the_transposed_weight_and_adds_the_bias():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    text = ("graph(%x : Tensor(float32, [5, 2, 3])):\n"
            f"  %w : Tensor(float32, [4, 3]) = prim::Constant[value={format_attr(w)}]()\n"
            f"  %b : Tensor(float32, [4]) = prim::Constant[value={format_attr(b)}]()\n"
            "  %y : Tensor(float32, [5, 2, 4]) = linear(%x, %w, %b)\n  %z : Tensor(float32, [5, 2, 4]) = relu(%y)\n"
            "  return (%z)\n")
    before = Interpreter(ir.parse(text)).run([x])[0]
    g, changed = run(transpose_frozen_linear, text)
    assert changed
    filecheck(str(g), "CHECK-NOT: linear(\nCHECK: Tensor(float32, [3, 4]) = prim::Constant\n"
                      "CHECK: matmul(%x, \nCHECK-NEXT: prim::Constant[value=1]\nCHECK-NEXT: add(\nCHECK-NEXT: relu(")
    weight = next(n for n in g.block if n.op == "prim::Constant" and getattr(n.attrs["value"], "shape", None) == (3, 4))
    assert weight.attrs["value"].flags.c_contiguous
    after = Interpreter(g).run([x])[0]
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after, np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0), rtol=1e-4,
                               atol=1e-5)


def test_transpose_frozen_linear_without_bias_and_leaves_runtime_weights_alone():
    """(And a weight applied twice - an unrolled recurrence's, at every step - is transposed once.)"""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    text = ("graph(%x : Tensor(float32, [B, 3]), %v : Tensor(float32, [2, 2])):\n"
            f"  %w : Tensor(float32, [2, 3]) = prim::Constant[value={format_attr(w)}]()\n"
            "  %n : None = prim::Constant[value=None]()\n"
            "  %y : Tensor(float32, [B, 2]) = linear(%x, %w, %n)\n"
            "  %z : Tensor(float32, [B, 2]) = linear(%y, %v, %n)\n"
            "  %u : Tensor(float32, [B, 2]) = linear(%x, %w, %n)\n  return (%z, %u)\n")
    x, v = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3), np.full((2, 2), 0.5, np.float32)
    before = Interpreter(ir.parse(text)).run([x, v])
    g, changed = run(transpose_frozen_linear, text)
    assert changed
    filecheck(str(g), "CHECK: matmul(%x, \nCHECK-NOT: add(\nCHECK: linear(%\nCHECK: matmul(%x, ")
    for got, expected in zip(Interpreter(g).run([x, v]), before):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    transposed = [n.attrs["value"] for n in g.block if n.op == "prim::Constant" and
                  getattr(n.attrs["value"], "shape", None) == (3, 2)]
    assert len(transposed) == 2 and transposed[0] is transposed[1]


LAYER_NORM_OF_OWN_SIZES = {
    "x.shape[-1:]": ('  %s : List[int] = size.all(%y)\n  %m2 : int = prim::Constant[value=-2]()\n'
                     '  %none : None = prim::Constant[value=None]()\n  %n : List[int] = slice.list(%s, %m1, %none, %one)\n'),
    "[x.size(-1)]": '  %d : int = size(%y, %m1)\n  %n : List[int] = prim::ListConstruct(%d)\n',
    "(x.shape[-1],)": ('  %s : List[int] = size.all(%y)\n  %d : int = getitem.list(%s, %m1)\n'
                       '  %n : Tuple[int] = prim::TupleConstruct(%d)\n'),
    "[x.size(1)] of a rank-2 x": ('  %d : int = size(%y, %one)\n  %n : List[int] = prim::ListConstruct(%d)\n'),
}


@pytest.mark.parametrize("form", list(LAYER_NORM_OF_OWN_SIZES))
@pytest.mark.parametrize("typed", [False, True])
def test_fuse_takes_a_layer_norm_over_its_inputs_own_last_sizes(form, typed):
    """normalized_shape from x's sizes (scripted code without example inputs: F.layer_norm(x,
    (x.shape[-1],))) is no constant, but matches x by construction: the group computes it from its
    input, and joins the pointwise chain before it."""
    t = F if typed else "Tensor"
    text = (f'graph(%x : {t}, %w : Tensor, %b : Tensor):\n  %one : int = prim::Constant[value=1]()\n'
            '  %m1 : int = prim::Constant[value=-1]()\n  %e : float = prim::Constant[value=1e-05]()\n'
            f'  %y : {t} = exp(%x)\n' + LAYER_NORM_OF_OWN_SIZES[form] +
            f'  %z : {t} = layer_norm(%y, %n, %w, %b, %e)\n  return (%z)\n')
    if "rank-2" in form and not typed:
        g, _ = run(fuse, text)  # (x.size(1) is the last size only where x's rank says so)
        assert "layer_norm(%y, %n" in str(g)
        return
    g, changed = run(fuse, text)
    dce(g)
    ir.verify(g)
    assert changed and sum(1 for n in g.nodes() if n.op == "prim::FusionGroup") == 1
    filecheck(str(g), "CHECK: prim::FusionGroup[kind=\"reduction\"\nCHECK: exp(\nCHECK: layer_norm(\n"
                      "CHECK-NOT: size")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    w, b = np.full(4, 2.0, np.float32), np.full(4, 0.5, np.float32)
    y = np.exp(x)
    want = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(Interpreter(g).run([x, w, b])[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [
    '  %d : int = size(%x, %m1)\n  %n : List[int] = prim::ListConstruct(%d, %d)\n',        # a size twice
    '  %d : int = size(%w, %m1)\n  %n : List[int] = prim::ListConstruct(%d)\n',            # another tensor's
    '  %m2 : int = prim::Constant[value=-2]()\n  %d : int = size(%x, %m2)\n'
    '  %n : List[int] = prim::ListConstruct(%d)\n',                                         # not the last
    '  %s : List[int] = size.all(%x)\n  %none : None = prim::Constant[value=None]()\n'
    '  %n : List[int] = slice.list(%s, %one, %none, %one)\n',                               # x.shape[1:]
])
def test_fuse_leaves_a_layer_norm_whose_shape_is_not_its_inputs_last_sizes(shape):
    text = ('graph(%x : Tensor, %w : Tensor):\n  %one : int = prim::Constant[value=1]()\n'
            '  %m1 : int = prim::Constant[value=-1]()\n  %e : float = prim::Constant[value=1e-05]()\n' + shape +
            '  %z : Tensor = layer_norm(%x, %n, %w, %w, %e)\n  return (%z)\n')
    g, _ = run(fuse, text)
    assert "layer_norm(%x, %n" in str(g) and "FusionGroup" not in str(g)
