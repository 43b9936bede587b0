"""Walks the op table: every op has reference cases; forward matches float64 numpy (and torch 2.13),
gradients pass gradcheck (and match torch), scalar expressions match the reference, and in-place
variants match their pure op."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import ops
from scriptc.autograd import gradcheck
from scriptc.ops import expr
from scriptc.tensors import Tensor, call, call_inplace, wrap

from .cases import CASES, STOCHASTIC, Bool, Complex, Int, Quantized, unwrap

try:
    import torch
except ImportError:  # torch is optional: the comparison tests skip
    torch = None

PURE_OPS = [op for op in ops.all_ops() if op.inplace_of is None and op.kind != ops.SCALAR]
# strings in cases that stand for a dtype argument
DTYPE_NAMES = ("float64", "complex128", "qint8", "quint8", "qint32")
CASE_PARAMS = [pytest.param(name, i, id=f"{name}-{c.label or i}") for name, cases in CASES.items()
               for i, c in enumerate(cases)]


def test_every_op_has_reference_cases():
    missing = [op.name for op in PURE_OPS if op.name not in CASES and op.name not in STOCHASTIC]
    assert not missing, f"ops without reference cases in tests/ops/cases.py: {missing}"
    unknown = [name for name in CASES if name not in ops.OPS]
    assert not unknown


def test_every_differentiable_op_has_a_gradient_case():
    lacking = [name for name, cases in CASES.items() if ops.OPS[name].differentiable and not any(c.grad for c in cases)]
    assert not lacking


def test_every_pointwise_op_has_a_scalar_expression():
    for op in PURE_OPS:
        if op.kind == ops.POINTWISE:
            assert op.scalar is not None, op.name
            placeholders = []
            for i, a in enumerate(op.schema.args):
                if a.is_tensor or "Scalar" in str(a.type).replace("ScalarType", ""):
                    placeholders.append(expr.var(i))
                else:
                    placeholders.append(scriptc.float32 if str(a.type) == "ScalarType" else a.default)
            tree = op.scalar(*placeholders)
            assert all(n.op in expr.PRIMITIVES for n in expr.walk(tree)), op.name


# The arguments the kernel spec reads of an op, by its fusion role (codegen/kernel.py).
TAIL_ARGUMENTS = {ops.REDUCE: {"self", "dim", "keepdim"}, ops.NORMALIZE: {"self", "dim", "dtype"},
                  ops.LAYER_NORM: {"input", "normalized_shape", "weight", "bias", "eps"}}


def test_fusion_roles_fit_their_ops():
    """Fusion reads roles, never op names: every tail has the arguments its form reads, a REDUCE
    says how it accumulates, every head is a library op with a tensor result."""
    tails = [op for op in PURE_OPS if op.fusion_tail is not None]
    assert {op.name for op in tails} >= {"sum", "mean", "amax", "softmax", "layer_norm"}
    for op in tails:
        assert TAIL_ARGUMENTS[op.fusion_tail.form] <= set(op.arg_index), op.name
        assert (op.fusion_tail.combine in ("add", "mul", "max", "min")) == (op.fusion_tail.form == ops.REDUCE), op.name
    heads = [op for op in PURE_OPS if op.fusion_head]
    assert {op.name for op in heads} >= {"matmul", "linear", "conv2d"}
    for op in heads:
        assert op.kind == ops.OPAQUE and op.schema.returns == (scriptc.types.TensorType(),), op.name
    assert all(op.fusion_head for op in PURE_OPS if op.head_floor)


def _scriptc_args(case, float_dtype, requires_grad=False):
    return [_to_scriptc(a, float_dtype, requires_grad and i not in case.nograd) for i, a in enumerate(case.args)]


def _to_scriptc(value, float_dtype, requires_grad=False):
    if isinstance(value, Quantized):
        return scriptc.quantize_per_tensor(wrap(value.array.astype(np.float32)), value.scale, value.zero_point,
                                           getattr(scriptc, value.dtype))
    if isinstance(value, Int):
        return wrap(value.array.astype(value.array.dtype if value.array.dtype in (np.int32, np.int8) else np.int64))
    if isinstance(value, Bool):
        return wrap(value.array.astype(bool))
    if isinstance(value, Complex):
        t = wrap(value.array.astype(np.complex64 if float_dtype == np.float32 else np.complex128))
        return t.requires_grad_(True) if requires_grad else t
    if isinstance(value, np.ndarray):
        t = wrap(value.astype(float_dtype))
        if requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(value, list) and value and isinstance(value[0], (np.ndarray, Int, Complex)):
        return [_to_scriptc(v, float_dtype, requires_grad) for v in value]
    if isinstance(value, list):
        return [_to_scriptc(v, float_dtype, requires_grad) if isinstance(v, (Int, Bool, Complex, np.ndarray)) else v
                for v in value]
    if isinstance(value, str) and value in DTYPE_NAMES:
        return getattr(scriptc, value)
    return value


def _as_numpy(result):
    if isinstance(result, Tensor):
        return result.dequantize()._data if result.is_quantized else result._data
    if isinstance(result, (tuple, list)):
        return [_as_numpy(r) for r in result]
    return np.asarray(result)


def _assert_close(actual, expected, rtol, atol, where):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), where
        for a, e in zip(actual, expected):
            _assert_close(a, e, rtol, atol, where)
        return
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "biu" or actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    else:
        wide = np.complex128 if actual.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(actual.astype(wide), expected, rtol=rtol, atol=atol, err_msg=where)


def _run(op, args, kwargs):
    bound = op.bind(tuple(args), kwargs)
    return call(op, bound)


@pytest.mark.parametrize("name, index", CASE_PARAMS)
def test_forward_matches_float64_reference(name, index):
    op, case = ops.OPS[name], CASES[name][index]
    args = [_to_scriptc(a, np.float32) for a in case.args]
    result = _run(op, args, case.kwargs)
    expected = case.ref(*[unwrap(a) for a in case.args], **case.kwargs)
    if case.post is not None:
        result, expected = case.post(*result), case.post(*expected)
    _assert_close(_as_numpy(result), expected, max(case.rtol, 1e-5), max(case.atol, 1e-5), f"{name} {case.label}")


@pytest.mark.parametrize("name, index", [p for p in CASE_PARAMS if ops.OPS[p.values[0]].differentiable
                                         and CASES[p.values[0]][p.values[1]].grad])
def test_gradcheck(name, index):
    op, case = ops.OPS[name], CASES[name][index]
    args = _scriptc_args(case, np.float64, requires_grad=True)
    inputs = []
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            inputs.append(a)
        elif isinstance(a, list):
            inputs.extend(t for t in a if isinstance(t, Tensor) and t.requires_grad)
    if not inputs or all(t.numel() == 0 for t in inputs):
        pytest.skip("no elements to differentiate")

    def fn(*_):
        out = _run(op, _prepared(case, args), case.kwargs)
        return case.post(*out) if case.post is not None else out

    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


def _to_torch(value, requires_grad):
    if isinstance(value, Quantized):
        return torch.quantize_per_tensor(torch.tensor(value.array, dtype=torch.float32), value.scale,
                                         value.zero_point, getattr(torch, value.dtype))
    if isinstance(value, Int):
        kept = {np.dtype(np.int32): torch.int32, np.dtype(np.int8): torch.int8}
        return torch.tensor(value.array, dtype=kept.get(value.array.dtype, torch.int64))
    if isinstance(value, Bool):
        return torch.tensor(value.array, dtype=torch.bool)
    if isinstance(value, Complex):
        return torch.tensor(value.array, dtype=torch.complex64, requires_grad=requires_grad)
    if isinstance(value, np.ndarray):
        return torch.tensor(value, dtype=torch.float32, requires_grad=requires_grad)
    if isinstance(value, list):
        return [_to_torch(v, requires_grad) if isinstance(v, (Int, Bool, Complex, np.ndarray)) else v for v in value]
    if isinstance(value, str) and value in DTYPE_NAMES:
        return getattr(torch, value)
    return value


def _prepared(case, args):
    return list(case.pre(*args)) if case.pre is not None else args


def _torch_call(op, case, targs):
    if case.torch is not None:
        return case.torch(torch, *targs, **case.kwargs)
    if op.base_name.startswith("special_"):
        return getattr(torch.special, op.base_name[len("special_"):])(*targs, **case.kwargs)
    fn = getattr(torch, op.base_name, None)
    if fn is None:
        fn = getattr(torch.nn.functional, op.base_name)
    return fn(*targs, **case.kwargs)


def _flat_tensors(args):
    for a in args:
        if isinstance(a, list):
            yield from (t for t in a if hasattr(t, "requires_grad"))
        elif hasattr(a, "requires_grad"):
            yield a


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name, index", CASE_PARAMS)
def test_matches_torch(name, index):
    op, case = ops.OPS[name], CASES[name][index]
    if op.kind == ops.RANDOM and any(isinstance(a, float) and 0 < a < 1 for a in case.args):
        pytest.skip("random values differ between generators")
    differentiable = op.differentiable and case.grad and case.torch_grad
    targs = [_to_torch(a, differentiable and i not in case.nograd) for i, a in enumerate(case.args)]
    sargs = _scriptc_args(case, np.float32, requires_grad=differentiable)
    expected = _torch_call(op, case, _prepared(case, targs))
    actual = _run(op, _prepared(case, sargs), case.kwargs)
    if case.post is not None:
        expected, actual = case.post(*expected), case.post(*actual)
    expected_list = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    actual_list = list(actual) if isinstance(actual, (tuple, list)) else [actual]
    where = f"{name} {case.label}"
    for a, e in zip(actual_list, expected_list):
        if not isinstance(e, torch.Tensor):  # a Python value (torch.equal, allclose)
            assert a == e and type(a) is type(e), where
            continue
        assert a.dtype.name == str(e.dtype).replace("torch.", ""), f"{where}: dtype {a.dtype} vs {e.dtype}"
        if e.is_quantized:  # compared by the values they stand for
            a, e = a.dequantize(), e.dequantize()
        _assert_close(a._data, e.detach().resolve_conj().numpy(), max(case.rtol, 1e-5), max(case.atol, 1e-5), where)
    if not differentiable:
        return
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(tuple(e.shape)).astype(np.float32) for e in expected_list]
    pairs = [(a, e, w) for a, e, w in zip(actual_list, expected_list, weights) if e.requires_grad]
    if not pairs or all(e.numel() == 0 for _, e, _ in pairs):
        return
    # Re(sum(e * w)): for a complex output its gradient is w too, in PyTorch's convention.
    sum(float(0) + torch.real((e * torch.tensor(w)).sum()) for _, e, w in pairs).backward()
    scriptc.autograd.backward([a for a, _, _ in pairs], [wrap(w) for _, _, w in pairs])
    for s, t in zip(_flat_tensors(sargs), _flat_tensors(targs)):
        if t.grad is None or not t.grad.any():
            assert s.grad is None or not np.any(s.grad._data), where
            continue
        assert s.grad is not None, f"{where}: no gradient"
        _assert_close(s.grad._data, t.grad.resolve_conj().numpy(), 1e-4, 1e-4, where + " grad")


@pytest.mark.parametrize("name, index", [p for p in CASE_PARAMS if ops.OPS[p.values[0]].kind == ops.POINTWISE])
def test_scalar_expression_matches_reference(name, index):
    op, case = ops.OPS[name], CASES[name][index]
    if any(isinstance(a, (Complex, complex)) for a in case.args):
        pytest.skip("fusion compiles real dtypes only: complex tensors run their numpy kernels")
    values = [unwrap(a) for a in case.args]
    bound = op.bind(tuple(values), case.kwargs)
    tensor_like = [isinstance(v, (np.ndarray, bool, int, float)) and not isinstance(v, str) for v in bound]
    exprs, inputs = [], []
    for v, is_value in zip(bound, tensor_like):
        if is_value and v is not None:
            exprs.append(expr.var(len(inputs)))
            inputs.append(np.asarray(v))
        else:
            exprs.append(v)
    if name == "to.dtype":
        exprs[1] = scriptc.float64
    tree = op.scalar(*exprs)
    shape = np.broadcast_shapes(*[np.shape(i) for i in inputs])
    got = expr.evaluate(tree, np, [np.broadcast_to(i, shape) for i in inputs], np.float64)
    expected = case.ref(*[unwrap(a) for a in case.args], **case.kwargs)
    if name.startswith("bitwise_"):
        pytest.skip("bitwise ops on integers lower to integer codegen, not a float64 expression")
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=1e-12, atol=1e-12, err_msg=f"{name} {case.label}")


@pytest.mark.parametrize("op", [op for op in ops.all_ops() if op.inplace_of is not None and op.kind != ops.RANDOM],
                         ids=lambda o: o.name)
def test_inplace_variant_matches_pure_op(op):
    pure = op.inplace_of
    case = CASES[pure.name][0]
    # A variant with a target check (float_power_ needs float64) runs where it accepts the target.
    args = [_to_scriptc(a, np.float64 if op.inplace_check else np.float32) for a in case.args]
    expected = _run(pure, args, case.kwargs)
    if isinstance(args[0], Tensor) and tuple(args[0].shape) != tuple(expected.shape):
        pytest.skip("the first case broadcasts beyond self")
    target = args[0].clone()
    version = target._version
    out = call_inplace(op, op.bind(tuple([target] + args[1:]), case.kwargs))
    assert out is target and target._version == version + 1
    np.testing.assert_allclose(target._data, expected._data.astype(target._data.dtype), rtol=1e-6)


def _rule_arguments(arg):
    """Metas a shape rule may get for one argument: known tensors, and sizes the graph computes (Unknown)."""
    from scriptc.ops.rules import Unknown
    declared = arg.type.elem if isinstance(arg.type, scriptc.types.OptionalType) else arg.type
    if isinstance(declared, scriptc.types.TensorType):
        return [scriptc.types.TensorType(scriptc.float32, (2, 3, 4, 5)), scriptc.types.TensorType(scriptc.float32, (6,))]
    if declared == scriptc.types.ListType(scriptc.types.Int):
        return [[Unknown(scriptc.types.Int), 2], Unknown(arg.type)]
    if declared in (scriptc.types.Int, scriptc.types.Float):
        return [Unknown(declared)]
    return [arg.default if arg.has_default else Unknown(arg.type)]


@pytest.mark.parametrize("op", [op for op in PURE_OPS if op.shape is not None], ids=lambda op: op.name)
def test_a_shape_rule_given_computed_sizes_makes_a_valid_type(op):
    # TensorType refuses a dim that is not an int, a symbol or None: a rule must turn an Unknown size into None
    import itertools
    for metas in itertools.islice(itertools.product(*(_rule_arguments(a) for a in op.schema.args)), 16):
        try:
            op.shape(*metas)
        except TypeError as refused:
            assert "a shape is a tuple" not in str(refused), (op.name, metas)
        except (RuntimeError, ValueError, IndexError, AttributeError, KeyError):
            pass  # a rule refusing the made-up shapes is not what this checks
