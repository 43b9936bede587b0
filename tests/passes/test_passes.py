"""Each pass on IR text before and after, including the cases where it must not fire."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc import ir
from scriptc.ir.printer import format_attr
from scriptc.passes.canonicalize import canonicalize
from scriptc.passes.constant_fold import constant_fold
from scriptc.passes.cse import cse
from scriptc.passes.dce import dce
from scriptc.passes.fold_conv_bn import fold_conv_bn
from scriptc.passes.freeze import freeze
from scriptc.passes.inline import inline
from scriptc.passes.remove_mutation import remove_mutation
from scriptc.passes.shape_infer import shape_infer
from scriptc.runtime import Interpreter, ModuleValue

from .filecheck import filecheck

F = "Tensor(float32, [B, 4])"


def run(pass_fn, text, *args):
    g = ir.parse(text)
    ir.verify(g)
    changed = pass_fn(g, *args)
    ir.verify(g)
    return g, changed


def test_inline_replaces_calls_with_bodies():
    helper = ir.parse("graph(%a : Tensor):\n  %0 : Tensor = relu(%a)\n  %1 : Tensor = neg(%0)\n  return (%1)\n")
    g, changed = run(inline, f'graph(%x : {F}):\n  %0 : Tensor = prim::Call[function="helper"](%x)\n'
                             '  %1 : Tensor = exp(%0)\n  return (%1)\n', {"helper": helper})
    assert changed
    filecheck(str(g), "CHECK-NOT: prim::Call\nCHECK: relu(%x)\nCHECK-NEXT: neg(\nCHECK-NEXT: exp(")


def test_inline_leaves_python_functions_alone():
    g, changed = run(inline, 'graph(%x : Tensor):\n  %0 : Tensor = prim::Call[function="ignored:f"](%x)\n'
                             '  return (%0)\n', {"ignored:f": lambda x: [x]})
    assert not changed and "prim::Call" in str(g)


MODULE = '''graph(%self : Module, %x : Tensor(float32, [B, 2])):
  %fc : Module(fc) = prim::GetAttr[name="fc"](%self)
  %w : Tensor(float32, [3, 2]) = prim::GetAttr[name="weight"](%fc)
  %b : Tensor(float32, [3]) = prim::GetAttr[name="bias"](%fc)
  %t : bool = prim::GetAttr[name="training"](%self)
  %y : Tensor = linear(%x, %w, %b)
  return (%y)
'''


def test_freeze_makes_attributes_constants_and_drops_self():
    state = ModuleValue.from_flat({"fc.weight": np.ones((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32),
                                   "training": False})
    g, changed = run(freeze, MODULE, state)
    assert changed and not any(str(p.type).startswith("Module") for p in g.inputs)
    filecheck(str(g), "CHECK-NOT: GetAttr\nCHECK: prim::Constant[value=array(float32, [3, 2]\nCHECK: linear(%x")


def test_freeze_keeps_attributes_the_graph_writes():
    text = ('graph(%self : Module, %x : Tensor):\n  %n : Tensor(int64, []) = prim::GetAttr[name="count"](%self)\n'
            '  %one : int = prim::Constant[value=1]()\n  %m : Tensor = add_(%n, %one, %one)\n  return (%x)\n')
    g, _ = run(freeze, text, ModuleValue.from_flat({"count": np.zeros((), np.int64)}))
    filecheck(str(g), "CHECK: prim::GetAttr[name=\"count\"](%self)")


INPLACE = f'''graph(%x : {F}):
  %one : int = prim::Constant[value=1]()
  %y : {F} = exp(%x)
  %z : {F} = add_(%y, %one, %one)
  %w : {F} = mul(%y, %y)
  return (%w)
'''


def test_remove_mutation_functionalizes_fresh_tensors():
    g, changed = run(remove_mutation, INPLACE)
    assert changed
    filecheck(str(g), "CHECK-NOT: add_\nCHECK: %{{.*}} = add(%y\nCHECK: mul(%{{[^y]+}}, %{{[^y]+}})")


def test_remove_mutation_must_not_touch_inputs_or_views():
    g, changed = run(remove_mutation, f'graph(%x : {F}):\n  %one : int = prim::Constant[value=1]()\n'
                                      f'  %z : {F} = add_(%x, %one, %one)\n  return (%x)\n')
    assert not changed and "add_" in str(g)
    text = (f'graph(%x : {F}):\n  %one : int = prim::Constant[value=1]()\n  %y : {F} = exp(%x)\n'
            f'  %zero : int = prim::Constant[value=0]()\n  %v : Tensor = select(%y, %zero, %zero)\n'
            f'  %z : {F} = add_(%y, %one, %one)\n  return (%v)\n')
    g, changed = run(remove_mutation, text)
    assert not changed and "add_" in str(g)


def test_remove_mutation_leaves_a_second_in_place_op_on_an_input():
    """x += a; x += b on an input x: the second add_ writes through the first one's result, which is x."""
    text = (f'graph(%x : {F}):\n  %one : int = prim::Constant[value=1]()\n  %a : {F} = exp(%x)\n'
            f'  %x1 : {F} = add_(%x, %a, %one)\n  %b : {F} = exp(%x1)\n'
            f'  %x2 : {F} = add_(%x1, %b, %one)\n  return (%x2)\n')
    g, changed = run(remove_mutation, text)
    assert not changed and str(g).count("add_") == 2


def test_remove_mutation_folds_list_appends():
    text = ('graph(%x : Tensor, %y : Tensor):\n  %l : List[Tensor] = prim::ListConstruct()\n'
            '  %l2 : List[Tensor] = append.list(%l, %x)\n  %l3 : List[Tensor] = append.list(%l, %y)\n'
            '  %zero : int = prim::Constant[value=0]()\n  %s : Tensor = stack(%l, %zero)\n  return (%s)\n')
    g, changed = run(remove_mutation, text)
    assert changed
    filecheck(str(g), "CHECK-NOT: append.list\nCHECK: prim::ListConstruct(%x, %y)\nCHECK: stack(")


def test_constant_fold_evaluates_and_takes_constant_branches():
    text = (f'graph(%x : {F}):\n  %a : int = prim::Constant[value=2]()\n  %b : int = prim::Constant[value=3]()\n'
            '  %c : int = mul.scalar(%a, %b)\n  %t : bool = prim::Constant[value=True]()\n'
            f'  %r : {F} = prim::If(%t)\n    block0():\n      %m : {F} = mul(%x, %c)\n      -> (%m)\n'
            '    block1():\n      -> (%x)\n  return (%r)\n')
    g, changed = run(constant_fold, text)
    assert changed
    filecheck(str(g), "CHECK: prim::Constant[value=6]\nCHECK-NOT: prim::If\nCHECK: mul(%x")


def test_constant_fold_unrolls_short_loops_but_not_long_or_dynamic_ones():
    loop = (f'graph(%x : {F}, %n : int):\n  %k : int = prim::Constant[value=TRIP]()\n'
            '  %t : bool = prim::Constant[value=True]()\n'
            f'  %r : {F} = prim::Loop(%k, %t, %x)\n    block0(%i : int, %acc : {F}):\n'
            f'      %m : {F} = add(%acc, %i, %i)\n      -> (%t, %m)\n  return (%r)\n')
    g, changed = run(constant_fold, loop.replace("TRIP", "3"))
    assert changed and "prim::Loop" not in str(g) and str(g).count("add(") == 3
    g, changed = run(constant_fold, loop.replace("TRIP", "100"))
    assert not changed and "prim::Loop" in str(g)
    g, changed = run(constant_fold, loop.replace("%k : int = prim::Constant[value=TRIP]()", "%k : int = abs.scalar(%n)"))
    assert "prim::Loop" in str(g)


def test_constant_fold_makes_a_tuple_of_ints_that_only_ops_read_a_constant_list():
    """A scripted nn.Conv2d passes _pair(stride) as a tuple: folded, the conv's arguments are constants
    (and it fuses with what follows it); a tuple the graph returns stays a tuple."""
    text = ('graph(%x : Tensor(float32, [1, 1, 4, 4]), %w : Tensor(float32, [1, 1, 1, 1])):\n'
            '  %one : int = prim::Constant[value=1]()\n  %n : None = prim::Constant[value=None]()\n'
            '  %zero : int = prim::Constant[value=0]()\n'
            '  %s : Tuple[int, int] = prim::TupleConstruct(%one, %one)\n'
            '  %p : Tuple[int, int] = prim::TupleConstruct(%zero, %zero)\n'
            '  %y : Tensor = conv2d(%x, %w, %n, %s, %p, %s, %one)\n'
            '  %t : Tuple[int, int] = prim::TupleConstruct(%one, %one)\n  return (%y, %t)\n')
    g, changed = run(constant_fold, text)
    assert changed
    filecheck(str(g), "CHECK: List[int] = prim::Constant[value=[1, 1]]\nCHECK: conv2d(\nCHECK: prim::TupleConstruct(")
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 4)).astype(np.float32)
    w = np.full((1, 1, 1, 1), 2.0, np.float32)
    y, t = Interpreter(g).run([x, w])
    np.testing.assert_allclose(y, 2 * x)
    assert t == (1, 1)


def test_constant_fold_does_not_fold_random_ops():
    text = ('graph():\n  %s : int = prim::Constant[value=3]()\n  %l : List[int] = prim::ListConstruct(%s)\n'
            '  %n : None = prim::Constant[value=None]()\n  %r : Tensor = randn(%l, %n, %n, %n)\n  return (%r)\n')
    g, _ = run(constant_fold, text)
    assert "randn" in str(g)


@pytest.mark.parametrize("body, fires", [
    ("%one : int = prim::Constant[value=1]()\n  %y : F = mul(%x, %one)", True),
    ("%zero : int = prim::Constant[value=0]()\n  %one : int = prim::Constant[value=1]()\n  %y : F = add(%x, %zero, %one)",
     True),
    ("%a : F = neg(%x)\n  %y : F = neg(%a)", True),
    ("%two : int = prim::Constant[value=2]()\n  %y : F = mul(%x, %two)", False),
    ("%one : float = prim::Constant[value=1.0]()\n  %y : Tensor(float32, [4, 4]) = mul(%x, %one)", False),
    ("%zero : int = prim::Constant[value=0]()\n  %two : int = prim::Constant[value=2]()\n  %y : F = add(%x, %zero, %two)",
     True),
])
def test_canonicalize_rules_fire_only_when_types_allow(body, fires):
    text = f"graph(%x : {F}):\n  " + body.replace(" F ", f" {F} ") + "\n  return (%y)\n"
    g, _ = run(canonicalize, text)
    returned_is_input = g.outputs[0] is g.inputs[0]
    assert returned_is_input == fires, str(g)


def test_canonicalize_drops_eval_dropout_and_noop_casts():
    text = (f'graph(%x : {F}):\n  %p : float = prim::Constant[value=0.5]()\n  %f : bool = prim::Constant[value=False]()\n'
            f'  %y : {F} = dropout(%x, %p, %f)\n  %d : ScalarType = prim::Constant[value=float32]()\n'
            f'  %z : {F} = to.dtype(%y, %d)\n  return (%z)\n')
    g, _ = run(canonicalize, text)
    assert g.outputs[0] is g.inputs[0]


@pytest.mark.parametrize("op, x_type, fires", [
    ("dropout", "Tensor", True),  # (any rank: nothing to keep)
    ("dropout2d", "Tensor", True),  # (other ranks only warn)
    ("dropout1d", "Tensor", False),  # (an eval dropout1d of a 4-D input raises; unknown rank keeps it)
    ("dropout1d", "Tensor(float32, [2, 3, 5])", True),
])
def test_eval_dropout_of_unknown_rank_goes_only_where_no_rank_raises(op, x_type, fires):
    text = (f'graph(%x : {x_type}):\n  %p : float = prim::Constant[value=0.5]()\n'
            f'  %f : bool = prim::Constant[value=False]()\n  %y : {x_type} = {op}(%x, %p, %f)\n  return (%y)\n')
    g, _ = run(canonicalize, text)
    assert (g.outputs[0] is g.inputs[0]) == fires, str(g)


def test_a_scripted_eval_dropout1d_still_raises_for_a_4d_input_after_optimization():
    import scriptc
    import scriptc.nn.functional as F

    class Model(scriptc.nn.Module):
        def forward(self, x):
            return F.dropout1d(x, 0.5, False) * 2

    optimized = scriptc.jit.optimize_for_inference(scriptc.jit.freeze(scriptc.jit.script(Model().eval())))
    x = scriptc.randn(2, 3, 5)
    np.testing.assert_array_equal(optimized(x).numpy(), x.numpy() * 2)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        optimized(scriptc.randn(2, 3, 4, 5))


def _rewritten(text: str, fires: bool, checks: str, args: list):
    """canonicalize (and dce) on `text`: that it fired as `fires` says; where it did, the IR holds
    `checks` and computes what the original does on `args`."""
    g, changed = run(canonicalize, text)
    dce(g)
    assert changed == fires, str(g)
    if fires:
        filecheck(str(g), checks)
        [got], [expected] = Interpreter(g)(args), Interpreter(ir.parse(text))(args)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    return g


@pytest.mark.parametrize("size, x_type, fires", [
    ("[1, 1]", "Tensor(float32, [B, 8, 5, 7])", True),
    ("1", "Tensor(float64, [8, 5, 7])", True),
    ("[2, 1]", "Tensor(float32, [B, 8, 5, 7])", False),   # not a global pool
    ("[1, 1]", "Tensor(int64, [B, 8, 5, 7])", False),     # mean takes floats only
    ("[1, 1]", "Tensor(float32)", False),                 # rank unknown
])
def test_canonicalize_turns_a_global_average_pool_into_a_mean(size, x_type, fires):
    out = x_type.replace("5, 7]", "1, 1]")
    text = (f"graph(%x : {x_type}):\n  %s : {'int' if size == '1' else 'List[int]'} = prim::Constant[value={size}]()\n"
            f"  %y : {out} = adaptive_avg_pool2d(%x, %s)\n  return (%y)\n")
    x = np.random.default_rng(0).standard_normal((2, 8, 5, 7) if "B" in x_type else (8, 5, 7))
    _rewritten(text, fires, "CHECK: prim::Constant[value=[-2, -1]]\nCHECK: prim::Constant[value=True]\n"
                            f"CHECK: %{{{{.*}}}} : {out} = mean(%x,\nCHECK-NOT: adaptive_avg_pool2d",
               [x.astype(np.float32 if "float32" in x_type else np.float64)])


_POOLED = ("graph(%x : Tensor, %w : Tensor(float32, [4, 3, 3, 3]), %v : Tensor(float32, [4, 4, 1, 1]), "
           "%u : Tensor(float32, [1, 3, 3, 3])):\n"
           "  %s : List[int] = prim::Constant[value=[1, 1]]()\n  %p : List[int] = prim::Constant[value=[0, 0]]()\n"
           "  %g : int = prim::Constant[value=1]()\n  %n : None = prim::Constant[value=None]()\n"
           "{body}  %y : Tensor(float32) = adaptive_avg_pool2d(%r, %g)\n  return (%y)\n")


_CONV = "  %c : Tensor(float32) = conv2d(%x, %w, %n, %s, %p, %s, %g)\n"


@pytest.mark.parametrize("body, fires", [
    # a scripted conv -> ReLU (or ReLU6): no rank known, but conv2d gives only 3-D or 4-D results
    (_CONV + "  %r : Tensor(float32) = relu(%c)\n", True),
    ("  %lo : float = prim::Constant[value=0.0]()\n  %hi : float = prim::Constant[value=6.0]()\n" + _CONV
     + "  %r : Tensor(float32) = hardtanh(%c, %lo, %hi)\n", True),
    # a ResNet's ReLU of the sum of two such
    (_CONV + "  %e : Tensor(float32) = relu(%c)\n  %d : Tensor(float32) = conv2d(%e, %v, %n, %s, %p, %s, %g)\n"
     "  %a : Tensor(float32) = add(%d, %e, %g)\n  %r : Tensor(float32) = relu(%a)\n", True),
    # squeeze(0) of an unbatched one-channel conv's result is 2-D (where the pool raises)
    (_CONV.replace("%w", "%u") + "  %z : List[int] = prim::Constant[value=[0]]()\n"
     "  %r : Tensor(float32) = squeeze(%c, %z)\n", False),
    # a sum with the input: any rank from 3 up
    (_CONV + "  %a : Tensor(float32) = add(%c, %x, %g)\n  %r : Tensor(float32) = relu(%a)\n", False),
    # a ReLU of the input: any rank, where the pool raises and a mean would not
    ("  %d : ScalarType = prim::Constant[value=float32]()\n  %f : Tensor(float32) = to.dtype(%x, %d)\n"
     "  %r : Tensor(float32) = relu(%f)\n", False),
])
def test_canonicalize_turns_a_global_average_pool_of_unknown_rank_into_a_mean_where_only_3_or_4_can_reach_it(
        body, fires):
    text = _POOLED.format(body=body)
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 7)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((4, 3, 3, 3)).astype(np.float32)
    v = np.random.default_rng(3).standard_normal((4, 4, 1, 1)).astype(np.float32)
    u = np.random.default_rng(4).standard_normal((1, 3, 3, 3)).astype(np.float32)
    _rewritten(text, fires, "CHECK: mean(%r,\nCHECK-NOT: adaptive_avg_pool2d", [x, w, v, u])


@pytest.mark.parametrize("x_type, to_type, fires", [
    ("Tensor(float32, [2, 3])", "Tensor", True),                     # wider: x already is one
    ("Tensor(float32, [2, 3])", "Tensor(float32)", True),
    ("Tensor(float32, [2, 3])", "Tensor(float32, [2, 3])", True),
    ("Tensor", "Tensor(float32)", False),                            # narrower: the refine says more than x
    ("Tensor(float32)", "Tensor(float32, [2, 3])", False),
    ("Tensor(float64, [2, 3])", "Tensor(float32)", False),
])
def test_canonicalize_drops_a_refine_to_a_type_its_tensor_already_has(x_type, to_type, fires):
    text = f"graph(%x : {x_type}):\n  %y : {to_type} = prim::Refine(%x)\n  %z : {to_type} = relu(%y)\n  return (%z)\n"
    g, changed = run(canonicalize, text)
    assert changed == fires, str(g)
    assert ("relu(%x)" in str(g)) == fires


@pytest.mark.parametrize("a_type, b_type, fires", [
    ("Tensor(float32, [B, 6])", "Tensor(float32, [6, 3])", True),
    ("Tensor(float64, [4, 6])", "Tensor(float64, [6, 3])", True),
    ("Tensor(float32, [B, 2, 6])", "Tensor(float32, [6, 3])", False),  # mm refuses it; matmul would not
    ("Tensor(float32)", "Tensor(float32, [6, 3])", False),             # rank unknown
    ("Tensor(float32, [4, 6])", "Tensor(float64, [6, 3])", False),     # mm refuses mixed dtypes
])
def test_canonicalize_turns_a_product_of_matrices_into_matmul(a_type, b_type, fires):
    out = f"Tensor({a_type[7:14]}, [4, 3])"
    text = f"graph(%a : {a_type}, %b : {b_type}):\n  %y : {out} = mm(%a, %b)\n  return (%y)\n"
    dtype = np.float32 if "float32" in a_type else np.float64
    rng = np.random.default_rng(0)
    _rewritten(text, fires, f"CHECK: %{{{{.*}}}} : {out} = matmul(%a, %b)\nCHECK-NOT: mm(",
               [rng.standard_normal((4, 6)).astype(dtype), rng.standard_normal((6, 3)).astype(dtype)])


_INSTANCE_NORM = ("graph(%x : {x}, %w : Tensor(float32, [3]), %b : Tensor(float32, [3]), %rm : Tensor(float32, [3])):\n"
                  "  %n : None = prim::Constant[value=None]()\n  %u : bool = prim::Constant[value={use}]()\n"
                  "  %m : float = prim::Constant[value=0.1]()\n  %e : float = prim::Constant[value=1e-05]()\n"
                  "  %y : {x} = instance_norm(%x, {affine}, {stats}, {stats}, %u, %m, %e)\n  return (%y)\n")


@pytest.mark.parametrize("x, affine, stats, use, fires", [
    ("Tensor(float32, [B, 3, 5, 7])", "%w, %b", "%n", "True", True),
    ("Tensor(float64, [2, 3, 5, 7])", "%n, %n", "%n", "True", True),
    ("Tensor(float32, [B, 3, 11])", "%w, %n", "%n", "True", True),
    ("Tensor(float32, [B, 3, 5, 7])", "%w, %b", "%rm", "True", False),   # running stats updated
    ("Tensor(float32, [B, 3, 5, 7])", "%w, %b", "%rm", "False", False),  # running stats used
    ("Tensor(float32)", "%w, %b", "%n", "True", False),                  # rank unknown
])
def test_canonicalize_turns_an_instance_norm_into_a_layer_norm(x, affine, stats, use, fires):
    text = _INSTANCE_NORM.format(x=x, affine=affine, stats=stats, use=use)
    rng = np.random.default_rng(0)
    shape = (2, 3, 5, 7) if "5, 7" in x else (4, 3, 11)
    args = [rng.standard_normal(shape).astype(np.float64 if "float64" in x else np.float32),
            rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32), np.zeros(3, np.float32)]
    g = _rewritten(text, fires, "CHECK: flatten(%x,\nCHECK: layer_norm(\nCHECK: size.all(%x)\nCHECK: reshape(", args)
    assert ("instance_norm" in str(g)) != fires, str(g)  # (with no statistics to write, dce drops it)


@pytest.mark.parametrize("op, x_type, p, out, fires", [
    ("norm", "Tensor(float32, [B, 6])", "2", "Tensor(float32, [B, 1])", True),
    ("linalg_vector_norm", "Tensor(float64, [3, 6])", "2.0", "Tensor(float64, [3, 1])", True),
    ("norm", "Tensor(float32, [B, 6])", "1", "Tensor(float32, [B, 1])", False),   # another p
    ("norm", "Tensor(complex64, [B, 6])", "2", "Tensor(float32, [B, 1])", False),  # |x|^2 is not x * x
    ("norm", "Tensor(float32)", "2", "Tensor", False),                             # dtype of the result unknown
])
def test_canonicalize_turns_a_two_norm_into_a_reduction_of_squares(op, x_type, p, out, fires):
    text = (f"graph(%x : {x_type}):\n  %p : {'float' if '.' in p else 'int'} = prim::Constant[value={p}]()\n"
            "  %d : List[int] = prim::Constant[value=[1]]()\n  %k : bool = prim::Constant[value=True]()\n"
            f"  %n : None = prim::Constant[value=None]()\n  %y : {out} = {op}(%x, %p, %d, %k, %n)\n  return (%y)\n")
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32 if "float32" in x_type else np.float64)
    _rewritten(text, fires, f"CHECK: mul(%x, %x)\nCHECK: sum(\nCHECK: {out} = sqrt(\nCHECK-NOT: norm(", [x])


_CONV_THEN_RANK = ("graph(%x : Tensor, %w : Tensor(float32, [4, 3, 3, 3])):\n"
                   "  %n : None = prim::Constant[value=None]()\n  %s : List[int] = prim::Constant[value=[1, 1]]()\n"
                   "  %g : int = prim::Constant[value=1]()\n  %e : int = prim::Constant[value=-1]()\n"
                   "  %f : bool = prim::Constant[value=False]()\n  %z : List[int] = prim::Constant[value=[0]]()\n"
                   "  %y : Tensor = {op}\n  %r : int = dim(%y)\n  return (%r)\n")


@pytest.mark.parametrize("op, fires", [
    ("conv2d(%x, %w, %n, %s, %s, %s, %g)", True),  # 3D or 4D in, the same rank out
    ("relu(%x)", True),
    ("sum(%x, %n, %f, %n)", False),               # a reduction to a scalar
    ("flatten(%x, %g, %e)", False),               # rank 2 from any rank
    ("squeeze(%x, %z)", False),                   # one less where dim 0 is 1
])
def test_canonicalize_reads_the_rank_of_a_rank_keeping_op_from_its_input(op, fires):
    """(A scripted BatchNorm's `input.dim()` check after a conv then no longer holds the conv's result
    back from fusing with its activation.)"""
    text = _CONV_THEN_RANK.format(op=op)
    g, changed = run(canonicalize, text)
    dce(g)
    assert changed == fires, str(g)
    if fires:
        filecheck(str(g), "CHECK: dim(%x)\nCHECK-NOT: dim(%y)")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for shape in [(2, 3, 6, 6), (3, 5, 5), (1, 3, 4, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        assert Interpreter(g)([x, w]) == Interpreter(ir.parse(text))([x, w])


def test_cse_merges_and_reaches_into_nested_blocks():
    text = (f'graph(%x : {F}, %c : bool):\n  %a : {F} = exp(%x)\n  %b : {F} = exp(%x)\n'
            f'  %r : {F} = prim::If(%c)\n    block0():\n      %e : {F} = exp(%x)\n      -> (%e)\n'
            '    block1():\n      -> (%b)\n'
            f'  %s : {F} = add(%a, %r, %c)\n  return (%s)\n')
    g, changed = run(cse, text)
    assert changed
    filecheck(str(g), "CHECK-COUNT-1: exp(")


def test_cse_does_not_merge_random_or_mutating_ops():
    text = ('graph():\n  %s : int = prim::Constant[value=3]()\n  %l : List[int] = prim::ListConstruct(%s)\n'
            '  %n : None = prim::Constant[value=None]()\n  %a : Tensor = rand(%l, %n, %n, %n)\n'
            '  %b : Tensor = rand(%l, %n, %n, %n)\n  %t : Tuple[Tensor, Tensor] = prim::TupleConstruct(%a, %b)\n'
            '  return (%t)\n')
    g, _ = run(cse, text)
    filecheck(str(g), "CHECK-COUNT-2: rand(")


def test_cse_keeps_an_array_constant_that_is_written_apart_from_an_equal_one():
    # a frozen running mean (written in place by batch_norm in training mode) is not the bias of zeros
    # it equals at load: merged, the bias would take the running statistics' updates
    zeros = "prim::Constant[value=array(float32, [2], [0.0, 0.0])]()"
    text = (f'graph(%x : Tensor(float32, [2])):\n  %mean : Tensor(float32, [2]) = {zeros}\n'
            f'  %bias : Tensor(float32, [2]) = {zeros}\n  %one : int = prim::Constant[value=1]()\n'
            '  %w : Tensor(float32, [2]) = add_(%mean, %x, %one)\n'
            '  %y : Tensor(float32, [2]) = add(%x, %bias, %one)\n  return (%y)\n')
    g, changed = run(cse, text)
    assert not changed
    filecheck(str(g), "CHECK-COUNT-2: prim::Constant[value=array(")


def test_dce_keeps_side_effects_and_values_used_in_nested_blocks():
    text = (f'graph(%x : {F}, %c : bool):\n  %dead : {F} = exp(%x)\n  %used : {F} = neg(%x)\n'
            f'  %one : int = prim::Constant[value=1]()\n  %kept : {F} = add_(%x, %one, %one)\n'
            f'  %r : {F} = prim::If(%c)\n    block0():\n      -> (%used)\n    block1():\n      -> (%x)\n'
            '  = prim::RaiseException[message="boom"]()\n  return (%r)\n')
    g, changed = run(dce, text)
    assert changed
    filecheck(str(g), "CHECK-NOT: exp(\nCHECK: neg(%x)\nCHECK: add_(\nCHECK: prim::If\nCHECK: RaiseException")


def test_dce_prunes_unused_if_outputs():
    text = (f'graph(%x : {F}, %c : bool):\n  %r : {F}, %q : {F} = prim::If(%c)\n'
            f'    block0():\n      %e : {F} = exp(%x)\n      -> (%x, %e)\n    block1():\n      -> (%x, %x)\n'
            '  return (%r)\n')
    g, changed = run(dce, text)
    assert changed and "exp(" not in str(g)


def test_shape_infer_propagates_symbolic_dims_through_reshape_and_matmul():
    text = ('graph(%x : Tensor(float32, [B, 4, 4]), %w : Tensor(float32, [16, 8])):\n'
            '  %zero : int = prim::Constant[value=0]()\n  %b : int = size(%x, %zero)\n'
            '  %m1 : int = prim::Constant[value=-1]()\n  %s : List[int] = prim::ListConstruct(%b, %m1)\n'
            '  %f : Tensor = view(%x, %s)\n  %y : Tensor = matmul(%f, %w)\n  %one : int = prim::Constant[value=1]()\n'
            '  %z : Tensor = add(%y, %one, %one)\n  return (%z)\n')
    g, changed = run(shape_infer, text)
    assert changed
    filecheck(str(g), "CHECK: %f : Tensor(float32, [B, 16]) = view\n"
                      "CHECK: %y : Tensor(float32, [B, 8]) = matmul\nCHECK: %z : Tensor(float32, [B, 8]) = add")


def test_shape_infer_sizes_a_cat_of_a_list_by_its_items_only_while_nothing_changes_the_list():
    """DenseNet's block: features = [x]; each layer reads the list and appends to it; cat(features)
    has every appended item's channels, not the first one's (a kernel was built for [B, 4] against
    a [8, 3] weight)."""
    grown = ('graph(%x : Tensor(float32, [B, 4])):\n  %l : List[Tensor] = prim::ListConstruct(%x)\n'
             '  %one : int = prim::Constant[value=1]()\n  %c0 : Tensor = cat(%l, %one)\n'
             '  %y : Tensor = relu(%c0)\n  %l2 : List[Tensor] = append.list(%l, %y)\n'
             '  %c : Tensor = cat(%l, %one)\n  return (%c)\n')
    g, _ = run(shape_infer, grown)
    filecheck(str(g), "CHECK: %c : Tensor = cat")
    [got] = Interpreter(g)([np.ones((2, 4), np.float32)])
    assert got.shape == (2, 8)
    fixed = grown.replace("  %l2 : List[Tensor] = append.list(%l, %y)\n", "")
    g, _ = run(shape_infer, fixed)
    filecheck(str(g), "CHECK: %c : Tensor(float32, [B, 4]) = cat")


@pytest.mark.parametrize("x_type, dims, out", [
    ("Tensor(float32, [B, 3])", "[0]", "Tensor(float32)"),         # B is 1 at batch 1: not even the rank is known
    ("Tensor(float32, [3, ?])", "None", "Tensor(float32)"),
    ("Tensor(float32, [B, 1, 3])", "[1]", "Tensor(float32, [B, 3])"),
    ("Tensor(float32, [B, 1, 3])", "[2]", "Tensor(float32, [B, 1, 3])"),
])
def test_shape_infer_knows_a_squeeze_only_where_the_dims_it_may_drop_are_numbers(x_type, dims, out):
    text = (f"graph(%x : {x_type}):\n  %z : {'None' if dims == 'None' else 'List[int]'} = prim::Constant[value={dims}]()\n"
            "  %y : Tensor = squeeze(%x, %z)\n  %r : int = dim(%y)\n  return (%y, %r)\n")
    g, _ = run(shape_infer, text)
    filecheck(str(g), f"CHECK: %y : {out} = squeeze")
    constant_fold(g)
    x = np.ones((1, 1, 3) if "1, 3" in x_type else (1, 3) if "B" in x_type else (3, 1), np.float32)
    [y, rank], [y_expected, rank_expected] = Interpreter(g)([x]), Interpreter(ir.parse(text))([x])
    assert rank == rank_expected == y_expected.ndim and y.shape == y_expected.shape


def test_fold_conv_bn_folds_frozen_eval_batchnorm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    consts = {"w": rng.standard_normal((4, 3, 3, 3)), "cb": rng.standard_normal(4), "rm": rng.standard_normal(4),
              "rv": rng.uniform(0.5, 2, 4), "g": rng.standard_normal(4), "bb": rng.standard_normal(4)}
    lines = ["graph(%x : Tensor(float32, [2, 3, 5, 5])):"]
    for k, v in consts.items():
        v = v.astype(np.float32)
        lines.append(f"  %{k} : Tensor(float32, {list(v.shape)}) = prim::Constant[value={format_attr(v)}]()")
    lines += ["  %l1 : List[int] = prim::Constant[value=[1, 1]]()", "  %one : int = prim::Constant[value=1]()",
              "  %c : Tensor = conv2d(%x, %w, %cb, %l1, %l1, %l1, %one)",
              "  %f : bool = prim::Constant[value=False]()", "  %m : float = prim::Constant[value=0.1]()",
              "  %e : float = prim::Constant[value=1e-05]()",
              "  %y : Tensor = batch_norm(%c, %rm, %rv, %g, %bb, %f, %m, %e)", "  return (%y)"]
    text = "\n".join(lines) + "\n"
    before = Interpreter(ir.parse(text)).run([x])[0]
    g, changed = run(fold_conv_bn, text)
    assert changed
    filecheck(str(g), "CHECK-NOT: batch_norm\nCHECK-COUNT-1: conv2d(")
    np.testing.assert_allclose(Interpreter(g).run([x])[0], before, rtol=1e-4, atol=1e-5)


def test_fold_conv_bn_needs_constants_and_eval_mode():
    text = ('graph(%x : Tensor, %w : Tensor, %rm : Tensor, %rv : Tensor):\n'
            '  %n : None = prim::Constant[value=None]()\n  %l1 : List[int] = prim::Constant[value=[1, 1]]()\n'
            '  %one : int = prim::Constant[value=1]()\n  %c : Tensor = conv2d(%x, %w, %n, %l1, %l1, %l1, %one)\n'
            '  %f : bool = prim::Constant[value=False]()\n  %m : float = prim::Constant[value=0.1]()\n'
            '  %e : float = prim::Constant[value=1e-05]()\n'
            '  %y : Tensor = batch_norm(%c, %rm, %rv, %n, %n, %f, %m, %e)\n  return (%y)\n')
    g, changed = run(fold_conv_bn, text)
    assert not changed and "batch_norm" in str(g)
