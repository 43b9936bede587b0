"""The meta device: tensors with a shape and a dtype but no data. Every op of the table computes its
outputs' shapes and dtypes from its shape rule; printing, reading values, moving between devices and
mixing devices behave as in torch 2.13."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import scriptc
from scriptc import ops
from scriptc.ops.meta import MetaArray, meta_array
from scriptc.tensors import Tensor, call, wrap
from scriptc.types import TensorType
from tests.ops.cases import CASES
from tests.ops.test_op_table import _to_scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")


def _on_meta(value):
    if isinstance(value, Tensor):
        return wrap(meta_array(value._data.shape, value._data.dtype))
    if isinstance(value, list):
        return [_on_meta(v) for v in value]
    return value


def _signature(result):
    if isinstance(result, Tensor):
        return tuple(result.shape), result.dtype
    return tuple(_signature(r) for r in result)


def _all_meta(result) -> bool:
    if isinstance(result, Tensor):
        return result.is_meta
    return all(_all_meta(r) for r in result)


def _rule_knows(op, args) -> bool:
    def meta(a):
        if isinstance(a, Tensor):
            return TensorType(a.dtype, tuple(a.shape))
        return [meta(v) for v in a] if isinstance(a, list) else a

    def known(t):
        if isinstance(t, TensorType):
            return t.dtype is not None and t.shape is not None and all(type(d) is int for d in t.shape)
        return isinstance(t, (tuple, list)) and bool(t) and all(known(x) for x in t)
    return known(op.shape(*[meta(a) for a in args]))


def test_every_op_gives_on_meta_tensors_the_shapes_and_dtypes_it_computes():
    """Each op-table case run on CPU tensors and on meta tensors of the same shapes and dtypes: the
    results' shapes and dtypes agree; where the shape rule cannot say (the sizes depend on values:
    nonzero, unique, masked_select) the meta call is torch's NotImplementedError."""
    checked, wrong = 0, []
    for name, cases in CASES.items():
        op = ops.OPS[name]
        for case in cases:
            args = [_to_scriptc(a, np.float32) for a in case.args]
            if any(isinstance(a, Tensor) and a.is_quantized for a in args):
                continue
            bound = op.bind(tuple(args), case.kwargs)
            try:
                expected = call(op, bound)
            except Exception:  # noqa: BLE001 - a case of an error, tested elsewhere
                continue
            if not isinstance(expected, (Tensor, tuple, list)) or not _rule_knows(op, bound):
                with pytest.raises(NotImplementedError, match=f"aten::{op.base_name}"):
                    call(op, tuple(_on_meta(list(bound))))
                continue
            on_meta = _on_meta(list(bound))
            if op.device_arg is not None:  # (a factory: made on the meta device)
                on_meta[op.device_arg] = "meta"
            result = call(op, tuple(on_meta))
            checked += 1
            if _signature(result) != _signature(expected) or not _all_meta(result):
                wrong.append(f"{name} {case.label}: {_signature(result)} != {_signature(expected)}")
    assert not wrong, "\n".join(wrong)
    assert checked > 1000


def _meta_outcomes(T):
    x = T.empty(2, 3, device="meta")
    return [
        repr(x), repr(T.zeros(2, 3, dtype=T.int64, device="meta")), repr(T.randn(0, 3, device="meta")),
        repr(T.empty((), device="meta")), repr(T.empty(2, 3, device="meta", requires_grad=True)),
        repr(x @ T.empty(3, 5, device="meta")), repr(x > 0), repr(x.sum(1)), repr(x.t()), repr(x[0]),
        repr(x.view(6)), repr(x.max(1).indices), repr(x.split(1)), str(x), format(x), x.is_meta, str(x.device),
        repr(T.device("meta")), x.stride(), x.numel(), x.nbytes, x.data_ptr(), x.is_cpu, x.is_contiguous(),
        repr(x.to(T.float64)), repr(T.ones(2, 3).to("meta")), repr(x.clone()), repr(copy.deepcopy(x)),
        repr(T.empty_like(T.ones(2), device="meta")), repr(T.zeros_like(x)), repr(T.cat([x, x])),
        repr(T.arange(5, device="meta")), repr(T.full((2,), 3, device="meta")), repr(T.eye(3, device="meta")),
        repr(T.tensor([1, 2], device="meta")), repr(x.new_zeros(3)), repr(x.new_empty(3)), repr(x.new_tensor([1.0])),
        repr(T.ones_like(x, device="cpu")), repr(x[T.tensor([0, 1])]), repr(x.uniform_()), repr(x.copy_(T.ones(2, 3))),
        repr(T.nn.functional.conv2d(T.empty(1, 3, 8, 8, device="meta"), T.empty(4, 3, 3, 3, device="meta"))),
        repr(T.nn.functional.layer_norm(x, (3,))), repr(T.randint(0, 5, (3,), device="meta")),
    ]


def test_meta_tensors_match_torch():
    assert _meta_outcomes(scriptc) == _meta_outcomes(torch)


@pytest.mark.parametrize("action", [
    lambda T, x: x[0, 0].item(), lambda T, x: x.tolist(), lambda T, x: x.numpy(), lambda T, x: np.asarray(x),
    lambda T, x: float(x[0, 0]), lambda T, x: bool(x[0, 0]), lambda T, x: x.to("cpu"), lambda T, x: x.cpu(),
    lambda T, x: T.ones(2, 3).copy_(x), lambda T, x: T.ones(2, 3) + x, lambda T, x: x + T.ones(2, 3),
    lambda T, x: T.cat([x, T.ones(2, 3)]), lambda T, x: T.nonzero(x),
    lambda T, x: T.unique(x), lambda T, x: T.masked_select(x, x > 0), lambda T, x: f"{x[0, 0]:.2f}",
    lambda T, x: T.device("metal"),
], ids=["item", "tolist", "numpy", "asarray", "float", "bool", "to_cpu", "cpu", "copy_into_cpu", "cpu_plus_meta",
        "meta_plus_cpu", "cat_mixed", "nonzero", "unique", "masked_select", "format_spec",
        "unknown_device"])
def test_reading_data_or_mixing_devices_raises_torchs_error(action):
    ours = raised(lambda: action(scriptc, scriptc.empty(2, 3, device="meta")))
    theirs = raised(lambda: action(torch, torch.empty(2, 3, device="meta")))
    assert ours is not None and theirs is not None
    (our_type, our_message), (their_type, their_message) = ours, theirs
    assert issubclass(our_type, their_type)
    if their_type is NotImplementedError and their_message.startswith(("aten::", "The register_meta")):
        assert our_message.startswith("aten::")  # (which op torch names depends on its decomposition)
    else:
        assert our_message == their_message


def test_the_default_device_makes_factories_meta():
    with scriptc.device("meta"):
        made = [scriptc.zeros(2), scriptc.randn(2, 3), scriptc.tensor([1.0]), scriptc.empty(4, dtype=scriptc.int32)]
    assert all(t.is_meta for t in made) and made[3].dtype is scriptc.int32
    assert not scriptc.zeros(2).is_meta
    scriptc.set_default_device("meta")
    try:
        assert scriptc.ones(3).is_meta
    finally:
        scriptc.set_default_device(None)
    assert scriptc.ones(3).device == scriptc.device("cpu")


def test_a_meta_array_holds_no_memory_and_copies_stay_meta():
    big = meta_array((1 << 20, 1 << 20), np.dtype(np.float32))
    assert big.shape == (1 << 20, 1 << 20) and big.strides == (0, 0)
    assert type(big.copy()) is MetaArray and type(big.astype(np.float64)) is MetaArray
    t = scriptc.empty(1 << 20, 1 << 20, device="meta")
    assert (t @ t).shape == (1 << 20, 1 << 20) and t.nbytes == 4 << 40


def test_in_place_ops_on_meta_tensors_check_shapes_and_dtypes():
    x = scriptc.empty(2, 3, device="meta")
    version = x._version
    assert x.add_(1).is_meta and x.fill_(2) is x and x._version == version + 2
    assert x.copy_(scriptc.ones(2, 3)) is x  # (load_state_dict into a meta module copies so)
    with pytest.raises(RuntimeError, match="must match"):
        x.add_(scriptc.empty(4, 3, device="meta"))
    with pytest.raises(RuntimeError, match="can't be cast"):
        scriptc.empty(2, dtype=scriptc.int64, device="meta").add_(scriptc.empty(2, device="meta"))


def test_backward_through_meta_tensors_gives_meta_gradients():
    for T in (scriptc, torch):
        x = T.empty(2, 3, device="meta", requires_grad=True)
        w = T.empty(4, 3, device="meta", requires_grad=True)
        T.nn.functional.linear(x, w).relu().sum().backward()
        assert x.grad.is_meta and w.grad.is_meta and tuple(w.grad.shape) == (4, 3)
        (grad,) = T.autograd.grad((x * 2).sum(), x)
        assert grad.is_meta and tuple(grad.shape) == (2, 3)
