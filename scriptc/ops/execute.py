"""Running one op on arrays: PyTorch's dtype promotion, the kernel, and PyTorch-style shape errors.

Eager dispatch (scriptc.tensors.call) and the reference interpreter both run ops
through `run_kernel`, so they compute in the same dtypes and fail the same way.
"""

from __future__ import annotations

import numpy as np

from scriptc.errors import ArgumentError, ShapeError
from scriptc.types import FLOAT, TensorType, default_float, from_numpy_dtype, result_type, scalar_dtype

from . import bfloat16
from .matrix import torch_name
from .rules import broadcast_shapes
from .schema import PROMOTE_FLOAT, SCALAR, TO_BOOL, OpDef

_dtype_cache: dict = {}


def clear_dtype_cache() -> None:
    """Forget the computed dtypes (they depend on the default dtype, which just changed)."""
    _dtype_cache.clear()


def _signature(a, array_type):
    if type(a) is array_type:
        return (a.dtype, a.ndim == 0)
    return type(a)


def _compute_dtype(op: OpDef, args, array_type=np.ndarray) -> np.dtype | None:
    key = (op.dtype_rule,) + tuple([_signature(args[i], array_type) for i in op.promote_args])
    try:
        return _dtype_cache[key]
    except KeyError:
        pass
    participants = []
    for i in op.promote_args:
        a = args[i]
        if type(a) is array_type:
            participants.append((from_numpy_dtype(a.dtype), 1 if a.ndim == 0 else 2))
        elif isinstance(a, (bool, int, float, complex)):
            participants.append((scalar_dtype(a), 0))
    result = None
    if participants:
        compute = result_type(participants)
        if op.dtype_rule == PROMOTE_FLOAT and compute.category < FLOAT:
            compute = default_float()
        result = None if op.dtype_rule == TO_BOOL else compute.np
    _dtype_cache[key] = result
    return result


def cast_dtype(op: OpDef, args, array_type=np.ndarray) -> np.dtype | None:
    """The dtype inputs must be cast to before the kernel, or None when numpy already computes in
    PyTorch's result dtype (the common case: arrays of one dtype with weak Python scalars).
    `array_type` is the array module's array class (numpy's, or cupy's)."""
    shared = None
    scalar_kind = 0
    for i in op.promote_args:
        a = args[i]
        if type(a) is array_type:
            if shared is None:
                shared = a.dtype
            elif a.dtype is not shared:
                return _compute_dtype(op, args, array_type)
        elif isinstance(a, complex):
            scalar_kind = 3
        elif isinstance(a, float):
            scalar_kind = max(scalar_kind, 2)
        elif isinstance(a, int) and not isinstance(a, bool) and scalar_kind < 1:
            scalar_kind = 1
    if shared is not None:
        kind = shared.kind
        # numpy's weak Python scalars (NEP 50) agree with PyTorch here, except that numpy widens an
        # integer tensor times a complex scalar to complex128 and a half tensor's to complex64 alike.
        if kind == "c" or (kind == "f" and (scalar_kind < 3 or shared.itemsize >= 4)) or (
                kind in "iu" and scalar_kind < 2) or (kind == "b" and scalar_kind == 0):
            if op.dtype_rule != PROMOTE_FLOAT or kind in "fc":
                return None
    return _compute_dtype(op, args, array_type)


def _kernel_error(op: OpDef, args, exc: Exception, array_type=np.ndarray):
    """Turn numpy's internal message into PyTorch's, via the op's shape rule where it knows better."""
    def meta(a):
        if type(a) is array_type:
            return TensorType(from_numpy_dtype(a.dtype), tuple(a.shape))
        if type(a) in (list, tuple) and any(type(t) is array_type for t in a):
            return [meta(t) for t in a]
        return a
    try:
        op.shape(*[meta(a) for a in args])
    except (ShapeError, RuntimeError, IndexError) as better:
        raise type(better)(f"{op.name}: {better}") from None
    except Exception:
        pass
    tensor_shapes = [a.shape for a in args if type(a) is array_type]
    if "broadcast" in str(exc):
        broadcast_shapes(*tensor_shapes)  # torch's words for the clash ("The size of tensor a (3) must match ...")
    shapes = ", ".join(str(list(shape)) for shape in tensor_shapes)
    raise ShapeError(f"{op.name}(): invalid arguments for input shapes {shapes}: {exc}") from None


def run_kernel(op: OpDef, xp, arrays: list, kernel=None):
    """Cast to the promoted dtype and run the op's kernel on `arrays` (schema order; modified in place),
    arrays of the array module `xp` (numpy or cupy); `kernel`, when given, in place of the op's own
    (a backend's version with the same arguments and results). bfloat16 arrays compute in float32."""
    if (op.dtype_args or bfloat16.SEEN[0]) and bfloat16.involved(op, xp, arrays):
        return bfloat16.run(op, xp, arrays, lambda op, xp, arrays: _run(op, xp, arrays, kernel))
    return _run(op, xp, arrays, kernel)


def _refuse_complex(op: OpDef, arrays: list) -> None:
    """torch's error for a complex input (a complex tensor or a Python complex number) to an op it supports
    for real dtypes only, naming the complex dtype the operands promote to."""
    for a in arrays:  # (a loop, not any() over a generator: this runs on every call of such an op)
        dtype = getattr(a, "dtype", None)
        if dtype.kind == "c" if dtype is not None else isinstance(a, complex):
            break
    else:
        return
    error = op.real_only(arrays) if callable(op.real_only) else op.real_only
    if isinstance(error, tuple):
        kind, message = error
        raise kind(message)
    double = any(getattr(getattr(a, "dtype", None), "itemsize", 0) == 16 if getattr(a.dtype, "kind", "") == "c"
                 else getattr(a.dtype, "kind", "") == "f" and a.dtype.itemsize == 8
                 for a in arrays if getattr(a, "dtype", None) is not None)
    name = "ComplexDouble" if double else "ComplexFloat"
    raise NotImplementedError(f'"{error}" not implemented for \'{name}\'')


def _refuse_dtype(op: OpDef, arrays: list) -> None:
    """torch's error for a bool or integer input to an op it computes for other dtypes only (float_only.py)."""
    refused, error, checked_args = op.float_only
    for i in checked_args:
        dtype = getattr(arrays[i], "dtype", None)
        if dtype is not None and dtype in refused:
            if isinstance(error, tuple):
                kind, message = error
                raise kind(message.format(dtype=torch_name(dtype)))
            raise NotImplementedError(f'"{error}" not implemented for \'{torch_name(dtype)}\'')


def _run(op: OpDef, xp, arrays: list, kernel=None):
    if op.real_only is not None:
        _refuse_complex(op, arrays)
    if op.float_only is not None:
        _refuse_dtype(op, arrays)
    if op.argument_check is not None:
        op.argument_check(arrays)
    to_bfloat16 = False
    if op.dtype_rule is not None:
        array_type = xp.ndarray
        compute = cast_dtype(op, arrays, array_type)
        if compute is not None:
            # Integers promoted to a bfloat16 default dtype (sqrt of int64 after
            # set_default_dtype(bfloat16)) compute in float32 and are stored as bfloat16.
            to_bfloat16 = compute == bfloat16.STORAGE
            if to_bfloat16:
                compute = xp.dtype(xp.float32)
            scalars_only = not any(type(arrays[i]) is array_type for i in op.promote_args)
            for i in op.promote_args:
                a = arrays[i]
                if type(a) is array_type and a.dtype != compute:
                    arrays[i] = a.astype(compute)
                elif scalars_only and isinstance(a, (bool, int, float, complex)):
                    # no tensor among the operands (where(c, 1.0, 0.0)): numpy would widen the Python
                    # scalars to float64/int64 where torch gives the promoted (default) dtype
                    arrays[i] = xp.asarray(a, dtype=compute)
    try:
        out = (kernel or op.kernel)(xp, *arrays)
        if to_bfloat16 and getattr(out, "dtype", None) is not None and out.dtype.kind == "f":
            return bfloat16.from_values(xp, out)
        return out
    except ArgumentError:
        raise
    except (ValueError, IndexError, KeyError) as exc:
        if op.kind == SCALAR:
            # an error about Python values (a missing list item, int('abc'), max([]), an index past
            # a list's end, a key a dict lacks): TorchScript raises it as a RuntimeError in Python's
            # words; it says nothing about shapes
            raise RuntimeError(exc.args[0] if exc.args else str(exc)) from None
        if not isinstance(exc, ValueError):
            raise
        _kernel_error(op, arrays, exc, xp.ndarray)
