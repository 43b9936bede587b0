"""Eager dispatch: every op reaches its kernel through `call(op, args)`, one lookup in the op
table: cast to the promoted dtype, run the kernel, wrap the result, record a Node for autograd when
an input requires grad, and tell the tracer. `call_inplace` runs the pure op and writes its result
into the target (PyTorch's `add_`), rebasing a view's history onto its base."""

from __future__ import annotations

import numpy as np

from scriptc import autograd, grad_mode
from scriptc import ops as _ops
from scriptc.amp.policy import autocast_arguments
from scriptc.amp.state import STATE as _AUTOCAST
from scriptc.errors import ShapeError
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.execute import run_kernel
from scriptc.ops.layout import channels_last, in_layout
from scriptc.ops.quantized import QuantizedArray, keep_quantization, not_for_quantized
from scriptc.ops.rules import scalar_type_name
from scriptc.tensors.arguments import check_all, check_tensor_lists, checked_value, traced_arguments, value_types
from scriptc.tensors import subclass as _subclass
from scriptc.tensors.core import _DIFFERENTIABLE_KINDS, Tensor, _mode, _tracer, _view_of, wrap
from scriptc.ops.meta import MetaArray
from scriptc.tensors.meta import meta_outputs, no_data_error, on_meta
from scriptc.types import Bool, Float, Int, from_numpy_dtype

_INDEX_PUT = _ops.OPS["index_put"]
_ZERO = _ops.OPS["zero"]
_COPY = _ops.OPS["copy"]
# The running torch.profiler's op hook, or None: `hook(op, run, args)` times `run(op, args)`. This one
# check is all that profiling support costs eager dispatch while no profiler runs.
profiler_hook: list = [None]
# The open forward-AD level's hook (scriptc.autograd.forward_ad), or None: `hook(op, run, args)` runs
# `run(op, args)` and gives its outputs tangents when an input has one. One check while no level is open.
forward_ad_hook: list = [None]



def wants_grad(values) -> bool:
    """Whether a call must run with autograd: grad mode is on and a tensor among `values` (nested in
    lists, tuples and dict values) requires grad."""
    return _mode.enabled and any(_requires_grad(v) for v in values)


def _requires_grad(value) -> bool:
    if isinstance(value, Tensor):
        return value.requires_grad
    if isinstance(value, (list, tuple)):
        return any(_requires_grad(v) for v in value)
    if isinstance(value, dict):
        return any(_requires_grad(v) for v in value.values())
    return False


def keep_layout(out, arrays):
    """A keeps_layout op's results channels-last where one of its first two tensor arguments is, as torch
    lays out a convolution's or a pool's output."""
    first, second = arrays[0], arrays[1] if len(arrays) > 1 else None
    # (no list built on the common path: this runs on every convolution and pool)
    if not (type(first) is np.ndarray and channels_last(first) or type(second) is np.ndarray and channels_last(second)):
        return out
    sources = [a for a in (first, second) if type(a) is np.ndarray]
    if type(out) is np.ndarray:
        return in_layout(np, out, *sources)
    if isinstance(out, tuple):  # (a pool's values and indices alike, as torch lays them out)
        return tuple(in_layout(np, o, *sources) if type(o) is np.ndarray else o for o in out)
    return out


def _unwrap(op, args):
    """Arrays in place of Tensors (also inside lists), Python numbers in place of numpy scalars; whether
    any input requires grad; whether any is unusual: quantized or on the meta device (its array is no
    plain ndarray) or of a Tensor subclass taking part in __torch_function__ (`_unusual_inputs` says
    which; one test per tensor here, as this runs on every call)."""
    arrays = list(args)
    needs_grad = unusual = False
    for i, a in enumerate(args):  # (type(), not .__class__: CPython calls it faster)
        if type(a) in _PYTHON_VALUES:  # (sizes, dims, flags, None: nothing to unwrap, decided by one lookup)
            continue
        if isinstance(a, Tensor):
            data = arrays[i] = a._data
            if a.requires_grad:
                needs_grad = True
            if type(data) is not _NDARRAY or type(a) is not Tensor and a._dispatches_subclass:
                unusual = True
        elif isinstance(a, _NUMPY_SCALAR):
            # a numpy scalar (np.sqrt(d) is an np.float64) counts as the Python number it holds, as in
            # torch: it does not make x / np.sqrt(d) float64 as it would in numpy
            arrays[i] = a.item()
    for i in op.tensor_list_args:
        items = args[i]
        if type(items) in (list, tuple):
            datas = arrays[i] = []
            for t in items:  # (one pass: torch.cat of a few tensors is a hot path)
                if not isinstance(t, Tensor):
                    datas.append(t)
                    continue
                data = t._data
                datas.append(data)
                if t.requires_grad:
                    needs_grad = True
                if type(data) is not _NDARRAY or type(t) is not Tensor and t._dispatches_subclass:
                    unusual = True
    return arrays, needs_grad, unusual


_NDARRAY, _NUMPY_SCALAR = np.ndarray, np.generic
# The argument types that are surely neither a Tensor nor a numpy scalar (tested before isinstance, which
# costs more)
_PYTHON_VALUES = frozenset({int, float, bool, type(None), list, tuple, str})


def _unusual_inputs(op, args: tuple, arrays: list) -> tuple[bool, bool, bool]:
    """Whether any input is quantized (then the op must take quantized tensors: torch's error otherwise),
    on the meta device, or of a Tensor subclass taking part in __torch_function__."""
    datas = [d for i, d in enumerate(arrays) if isinstance(args[i], Tensor)]
    tensors = [a for a in args if isinstance(a, Tensor)]
    for i in op.tensor_list_args:
        if type(args[i]) in (list, tuple):
            datas += [d for t, d in zip(args[i], arrays[i]) if isinstance(t, Tensor)]
            tensors += [t for t in args[i] if isinstance(t, Tensor)]
    quantized = any(type(d) is QuantizedArray for d in datas)
    if quantized and not (op.accepts_quantized or op.view):
        raise not_for_quantized(op)
    meta = any(type(d) is MetaArray for d in datas)
    return quantized, meta, any(t._dispatches_subclass for t in tensors)


def _on_meta(op, args: tuple, arrays: list, meta_inputs: bool) -> bool:
    """Whether a factory's result is made on the meta device: its device argument says so, or, left
    None, its input is there (empty_like) or the default device is (`with torch.device("meta"):`). A
    factory told to make a CPU tensor from a meta one (ones_like(m, device="cpu")) reads only its
    shape: the kernel gets a plain array in its place."""
    given = args[op.device_arg] if op.device_arg < len(args) else None
    meta = meta_inputs if given is None and op.tensor_args else on_meta(given)
    if meta_inputs and not meta:
        arrays[:] = [a.view(np.ndarray) if type(a) is MetaArray else a for a in arrays]
    return meta


def call(op, args: tuple):
    """Run one op-table op eagerly on bound arguments (schema order); the only path to a kernel."""
    if profiler_hook[0] is not None:
        return profiler_hook[0](op, call, args)
    if forward_ad_hook[0] is not None:
        return forward_ad_hook[0](op, call, args)
    checks = op.value_types
    if checks is None:
        checks = value_types(op)
    given = len(args)  # (internal callers may leave trailing defaults out)
    for i, types, refuses_bool in checks:
        if i < given and (not isinstance(args[i], types) or refuses_bool and type(args[i]) is bool):
            if _subclass.overrides(args[i]):
                return _subclass.call_torch_function(op, args, _subclass.subclass_types(args))
            args = (*args[:i], checked_value(op, i, args[i]), *args[i + 1:])
    if op.tensor_list_args:
        args = check_tensor_lists(op, args)
    if _AUTOCAST.cpu_enabled:
        args = autocast_arguments(op, args)
    arrays, needs_grad, unusual = _unwrap(op, args)
    quantized = meta = False
    if unusual:
        quantized, meta, subclassed = _unusual_inputs(op, args, arrays)
        if subclassed and not _subclass._disabled[0]:
            return _subclass.call_torch_function(op, args, _subclass.subclass_types(args))
    if op.device_arg is not None:
        meta = _on_meta(op, args, arrays, meta)
    tracer = _tracer[0]
    if tracer is not None:
        traced_arguments(op, arrays)
    try:
        out = meta_outputs(op, args) if meta else run_kernel(op, np, arrays)
    except Exception:
        # torch checks argument types before it computes: a kernel that failed on an argument of the
        # wrong type (a float dim, a string where a number belongs) reports that argument instead
        check_all(op, args)
        raise
    if quantized:
        out = keep_quantization(out, arrays)
    aux = None
    if op.aux:
        out, aux = out
    if op.keeps_layout:
        out = keep_layout(out, arrays)
    record = needs_grad and op.grad is not None and _mode.enabled
    if type(out) is np.ndarray:
        result = _wrap_output(op, out, args) if op.view else wrap(out)
        outs = (result,)
    elif isinstance(out, (tuple, list)):
        outs = tuple(_wrap_output(op, o, args) for o in out)
        result = op.result_tuple(*outs) if op.result_tuple is not None else (
            list(outs) if type(out) is list or op.schema.returns[0].__class__.__name__ == "ListType" else outs)
    elif isinstance(out, (bool, int, float)) and op.schema.returns[0] in _PYTHON_RESULTS:
        if tracer is not None:
            tracer.data_dependent(f"the result of {op.base_name}()")
        return out
    else:
        result = _wrap_output(op, out if isinstance(out, np.ndarray) else np.asarray(out), args)
        outs = (result,)
    if record:
        node = autograd.record(op, arrays, _grad_inputs(op, args), out, aux, np)
        for i, t in enumerate(outs):
            if t._data.dtype.kind in _DIFFERENTIABLE_KINDS and i not in op.nondifferentiable_outputs:
                t.requires_grad = True
                t.grad_fn = node
                t._out_index = i
        if "out" in op.save:
            autograd.watch_output(node, outs[0])
    elif _mode.inference:
        grad_mode.mark_inference(outs)
    if tracer is not None:
        tracer.record(op, args, outs)
    if op.python_result is not None:
        return op.python_result(args, outs)
    return result


# Ops whose schema returns one of these give the Python value (torch.equal, allclose).
_PYTHON_RESULTS = (Bool, Int, Float)


def _grad_inputs(op, args):
    """Per argument: the Tensor, the list of Tensors, or None, for the autograd Node."""
    inputs = [a if isinstance(a, Tensor) else None for a in args]
    for i in op.tensor_list_args:
        if type(args[i]) in (list, tuple):
            inputs[i] = [t if isinstance(t, Tensor) else None for t in args[i]]
    return inputs


def _root(array: np.ndarray):
    """The object that owns an array's memory, following `.base` (also through the non-array holder
    numpy's as_strided puts between a strided view and its source)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _wrap_output(op, out, args) -> Tensor:
    if op.view:
        src = args[0]
        if isinstance(src, Tensor):
            data = src._data
            base = out.base
            if base is not None and (base is data or base is data.base or _root(out) is _root(data)):
                return _view_of(src, out)
    return wrap(out)


def _check_inplace_allowed(target: Tensor, other_args) -> None:
    if not _mode.inference and grad_mode.is_inference(target):
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if _mode.enabled and target.requires_grad and target.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = target._base
    if _mode.enabled and base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if not target._data.flags.writeable and type(target._data) is not MetaArray:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def call_inplace(op, args: tuple) -> Tensor:
    """Run the pure op `op.inplace_of` and write its result into args[0] (PyTorch's `add_`)."""
    if profiler_hook[0] is not None:
        return profiler_hook[0](op, call_inplace, args)
    if forward_ad_hook[0] is not None:
        return forward_ad_hook[0](op, call_inplace, args)
    target = args[0]
    pure = op.inplace_of
    grad_flow = _mode.enabled and any(
        isinstance(a, Tensor) and a.requires_grad for a in args) and pure.grad is not None
    _check_inplace_allowed(target, args[1:])
    if type(target._data) is MetaArray or any(type(getattr(a, "_data", None)) is MetaArray for a in args[1:]):
        return _inplace_on_meta(op, args)
    if op.inplace_check is not None:
        op.inplace_check(target._data)
    # A non-differentiable op (a comparison's 0/1, random draws) writes values that do not depend on
    # target's old value: target keeps requiring grad, and its history gets zero gradient (torch's
    # EqBackward0 / UniformBackward0 for eq_, uniform_, ...).
    constant_write = _mode.enabled and pure.grad is None and target.requires_grad
    tracer = _tracer[0]
    _tracer[0] = None
    try:
        if grad_flow:
            # The pure op sees the old value: a copy when its gradient formula reads it, since the
            # write below overwrites target's storage.
            result = call(pure, (_old_value(target, "self" in pure.save),) + tuple(args[1:]))
            history = result
        else:
            with autograd.no_grad():
                result = call(pure, args)
            if constant_write:
                history = call(_ZERO, (_old_value(target, False),))
    finally:
        _tracer[0] = tracer
    out = result._data
    if out.dtype != target._data.dtype and (_bfloat16.holds(out) or _bfloat16.holds(target._data)):
        out = _bfloat16.cast(np, out, target._data.dtype)
    _check_fits(out, target)
    np.copyto(target._data, out, casting="unsafe")
    target._vc[0] += 1
    if grad_flow or constant_write:
        if target._base is not None:
            _rebase_history(target._base, target, history)
        target.requires_grad = True
        target.grad_fn = history.grad_fn
        target._out_index = 0
        if grad_flow and "out" in pure.save:
            # The formula reads the output, which now lives in target's storage.
            target.grad_fn.versions[-1] = ("output 0", target._vc, target._vc[0], None)
    if tracer is not None:
        tracer.record_inplace(op, args, target)
    return target


def _check_fits(out, target: Tensor) -> None:
    """torch's errors for an in-place result that cannot be written into target: a dtype it cannot be
    cast to, another shape."""
    if out.dtype != target._data.dtype and not np.can_cast(out.dtype, target._data.dtype, "same_kind") and not (
            _bfloat16.holds(out) or _bfloat16.holds(target._data)):
        raise RuntimeError(f"result type {scalar_type_name(from_numpy_dtype(out.dtype))} can't be cast to the "
                           f"desired output type {scalar_type_name(target.dtype)}")
    if out.shape != target._data.shape:
        raise ShapeError(f"output with shape {list(target._data.shape)} doesn't match the broadcast shape "
                         f"{list(out.shape)}")


def _inplace_on_meta(op, args: tuple) -> Tensor:
    """An in-place op on a meta tensor computes nothing; its result's shape and dtype must still fit
    the target (and, as in torch, a CPU input may write into it: `meta.copy_(cpu)` in load_state_dict).
    Writing meta values into a CPU tensor is torch's error."""
    target, pure = args[0], op.inplace_of
    if type(target._data) is not MetaArray:
        if pure is _COPY:
            raise no_data_error()
        raise RuntimeError("Tensor on device meta is not on the expected device cpu!")
    out = meta_outputs(pure, args, check_devices=False)
    _check_fits(out[0] if pure.aux else out, target)
    target._vc[0] += 1
    return target


def _old_value(target: Tensor, copy: bool) -> Tensor:
    """target's value and history before an in-place write, as a Tensor of its own (a copy of the
    values when a gradient formula will read them after the write)."""
    old = wrap(target._data.copy() if copy else target._data)
    old.requires_grad, old.grad_fn, old._out_index = target.requires_grad, target.grad_fn, target._out_index
    return old


def _rebase_history(base: Tensor, view: Tensor, result: Tensor) -> None:
    """An in-place op wrote `result` through `view` into `base`'s storage: from now on base's value
    is index_put(old base, view's positions in base, result), and that is its history, so gradient
    reaches both what base was and what was written (PyTorch's CopySlices)."""
    old = wrap(base._data)
    old.requires_grad, old.grad_fn, old._out_index = base.requires_grad, base.grad_fn, base._out_index
    positions = [wrap(p) for p in _view_positions(base._data, view._data)]
    written = call(_INDEX_PUT, (old, positions, result, False))
    base.requires_grad = True
    base.grad_fn = written.grad_fn
    base._out_index = 0


def _view_positions(base: np.ndarray, view: np.ndarray) -> tuple:
    """Per element of `view`, which lies in `base`'s memory, its index in `base` (one array per dim)."""
    if view.itemsize != base.itemsize:
        raise RuntimeError("an in-place operation on a view with another dtype than its base cannot record "
                           "gradient in scriptc")
    step = base.itemsize
    low, high = np.lib.array_utils.byte_bounds(base)
    shadow = np.full((high - low) // step, -1, dtype=np.intp)

    def laid_over(a: np.ndarray) -> np.ndarray:
        start = (a.__array_interface__["data"][0] - low) // step
        strides = tuple(s // step * shadow.itemsize for s in a.strides)
        return np.lib.stride_tricks.as_strided(shadow[start:], a.shape, strides)

    laid_over(base)[...] = np.arange(base.size).reshape(base.shape)
    return np.unravel_index(laid_over(view).copy(), base.shape)


# --- tensor creation -------------------------------------------------------------------
