"""Checking an eager call's arguments against its op's schema, with torch's TypeError when one does not fit.

Eager dispatch checks the tensor, number and int arguments of every call (a cheap isinstance each: a
kernel given None, a string or a list where a Tensor belongs fails inside numpy, or worse computes
something torch refuses), and checks every argument when a kernel raises, so that the error a user sees
names the argument as torch's does rather than numpy's or Python's complaint about it.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from scriptc.ops.schema import OpDef, takes_int_list
from scriptc.tensors.core import Tensor, _tracer
from scriptc.types import (
    INT,
    Int,
    ListType,
    OptionalType,
    Scalar,
    ScalarType,
    TensorType,
    Type,
    UnionType,
    device,
    dtype,
)

# What an argument may be, by schema type (OpDef.value_args): exactly these pass the check that runs on
# every call (a bool, an int to isinstance, is no int: see _REFUSES_BOOL); anything else goes through
# `fits` for torch's leniencies (numpy scalars, one-element tensors for numbers). The items of a list of
# ints are left to the kernel (and `check_all`).
_FAST_TYPES = {
    "tensor": (Tensor,),
    "tensor_or_number": (Tensor, int, float, complex),
    "int": (int,),
    "bool": (bool,),
    "number": (int, float, complex),
    "int_list": (list, tuple, int),
}
_FAST_TYPES.update({"optional_" + kind: types + (type(None),) for kind, types in list(_FAST_TYPES.items())})
# The kinds torch's argument parser refuses a Python bool for (x.sum(True), x.topk(True)), which
# isinstance(True, int) lets through
_REFUSES_BOOL = frozenset({"int", "int_list", "optional_int", "optional_int_list"})


def value_types(op: OpDef) -> tuple:
    """op.value_types, computed once: (index, the Python types that pass the check on every call, whether
    a bool is refused where they take it as an int)."""
    op.value_types = tuple((i, _FAST_TYPES[kind], kind in _REFUSES_BOOL) for i, kind in op.value_args)
    return op.value_types


def checked_value(op: OpDef, index: int, value):
    """`value` as the kernel takes argument `index` of `op`, called when it is not of the argument's
    usual Python types: an integer given as a numpy integer (anything with __index__) or a 0-d integer
    tensor becomes a Python int, as torch's argument parser reads it (x.sum(np.int64(1))); TypeError in
    torch's words where it does not fit (a float or bool tensor for an int)."""
    t = op.schema.args[index].type
    if not fits(t, value):
        raise argument_error(op, index, value)
    if isinstance(t, OptionalType):
        t = t.elem
    if value is None or not (t == Int or takes_int_list(t)):
        return value
    if isinstance(value, Tensor):  # (an int[] takes a one-element 1-d tensor too)
        if value.dtype.category != INT or value.dim() > (0 if t == Int else 1):
            raise argument_error(op, index, value)
        if _tracer[0] is not None:
            return value  # (jit.trace reads it in the graph: topk's k from a size stays computed)
        return int(value.item())
    return operator.index(value) if hasattr(type(value), "__index__") else value


def traced_arguments(op: OpDef, arrays: list) -> None:
    """While jit.trace records: `arrays` as the kernel takes them. A size read from a traced tensor (an int
    subclass, which numpy does not take as a weak Python scalar: `x / x.size(1)` would compute in float64)
    becomes a plain int; the one-element integer tensors in a list of ints (`F.pad(img, (0, w - iw))` with
    w computed as a tensor, as torchvision batches images) become the ints the kernel takes. The recorded
    call keeps the originals, so that the graph reads each one (torch's tracer records aten::Int of a
    tensor) rather than baking in the value it had at trace time."""
    for i, a in enumerate(arrays):
        if isinstance(a, int) and type(a) not in (int, bool):
            arrays[i] = int(a)
    for i, kind in op.value_args:
        items = arrays[i] if i < len(arrays) else None
        if kind.endswith("int_list") and type(items) in (list, tuple) and any(isinstance(v, Tensor) for v in items):
            arrays[i] = [int(v._data.reshape(-1)[0]) if isinstance(v, Tensor) else v for v in items]


def check_tensor_lists(op: OpDef, args: tuple) -> tuple:
    """`args`, with a TypeError in torch's words for an item of a list of tensors that is not a Tensor.
    While jit.trace records, a size read from a traced tensor is one: torch's tracer gives sizes as 0-d
    tensors (torchvision stacks them: `torch.stack([img.shape[i] for img in images])`), so such an item
    becomes the 0-d int64 tensor of that size, recorded as made from it."""
    for i in op.tensor_list_args:
        items = args[i]
        if isinstance(items, (list, tuple)):
            for k, item in enumerate(items):
                if not isinstance(item, Tensor) and not fits(op.schema.args[i].type.elem, item):
                    size = _tracer[0].size_tensor(item) if _tracer[0] is not None else None
                    if size is None:
                        raise TypeError(f"expected Tensor as element {k} in argument {i}, but got "
                                        f"{type(item).__name__}")
                    items = type(items)(items[:k]) + type(items)([size]) + type(items)(items[k + 1:])
            if items is not args[i]:
                args = args[:i] + (items,) + args[i + 1:]
    return args


def check_all(op: OpDef, args: tuple) -> None:
    """TypeError in torch's words for the first argument that does not fit its schema type."""
    check_tensor_lists(op, args)
    for i, (arg, value) in enumerate(zip(op.schema.args, args)):
        if not fits(arg.type, value):
            raise argument_error(op, i, value)


def fits(t: Type, value) -> bool:
    """Whether `value` may be passed where the schema declares `t`, as torch's argument parser decides
    (a one-element Tensor passes for a number, an int for a list of ints)."""
    if isinstance(t, TensorType):
        return isinstance(value, Tensor)
    if isinstance(t, OptionalType):
        return value is None or fits(t.elem, value)
    if isinstance(t, UnionType):
        return any(fits(o, value) for o in t.options)
    if isinstance(t, ListType):
        if isinstance(value, Tensor):
            return t.elem != TensorType() or value.dim() > 0
        if isinstance(value, (list, tuple)):
            return all(fits(t.elem, v) for v in value)
        return isinstance(t.elem, ScalarType) and t.elem.name in ("int", "float") and _is_number(value, t.elem.name)
    if isinstance(t, ScalarType):
        return _fits_scalar(t, value)
    return True


def _fits_scalar(t: ScalarType, value) -> bool:
    name = t.name
    if t is Scalar:
        return _is_number(value, "complex") or (isinstance(value, Tensor) and value.numel() == 1)
    if name in ("int", "float", "complex"):
        return _is_number(value, name) or (isinstance(value, Tensor) and value.numel() == 1)
    if name == "bool":  # (torch's parser takes no int, float or tensor for a bool)
        return isinstance(value, (bool, np.bool_))
    if name == "str":
        return isinstance(value, str)
    if name == "ScalarType":
        return isinstance(value, dtype)
    if name == "Device":
        return isinstance(value, (str, int, device))
    return True


def _is_number(value, widest: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return widest != "int"  # (torch's parser takes a bool for a float or a number, never for an int)
    if widest == "int":
        return isinstance(value, (int, np.integer)) or hasattr(type(value), "__index__")
    if widest == "float":
        return isinstance(value, (int, float, np.integer, np.floating))
    return isinstance(value, numbers.Number)


def _type_name(t: Type) -> str:
    if isinstance(t, OptionalType):
        return _type_name(t.elem)
    if isinstance(t, UnionType):
        return _type_name(t.options[0])
    if isinstance(t, TensorType):
        return "Tensor"
    if isinstance(t, ListType):
        return {"int": "tuple of ints", "float": "tuple of floats", "bool": "tuple of bools"}.get(
            str(t.elem), "tuple of Tensors")
    names = {"Scalar": "Number", "ScalarType": "torch.dtype", "Device": "torch.device"}
    return names.get(str(t), str(t))


def argument_error(op: OpDef, index: int, value) -> TypeError:
    """torch's TypeError for argument `index` of `op` given `value`."""
    arg = op.schema.args[index]
    name = "input" if arg.name == "self" else arg.name
    where = "" if arg.kwarg_only else f" (position {index + 1})"
    expected = arg.type.elem if isinstance(arg.type, OptionalType) else arg.type
    misfit = next(((k, v) for k, v in enumerate(value) if not fits(expected.elem, v)), None) if (
        isinstance(expected, ListType) and isinstance(value, (list, tuple))) else None
    if misfit is not None:  # (torch names the item of a list that does not fit, in two ways)
        position, item = misfit
        if position == 0:  # (the item torch's parser checks to pick the overload)
            return TypeError(f"{op.base_name}(): argument '{name}'{where} must be {_type_name(arg.type)}, but "
                             f"found element of type {type(item).__name__} at pos 0")
        return TypeError(f"{op.base_name}(): argument '{name}' failed to unpack the object at pos {position + 1} "
                         f"with error \"type must be {_type_name(arg.type)},but got {type(item).__name__}\"")
    return TypeError(f"{op.base_name}(): argument '{name}'{where} must be {_type_name(arg.type)}, "
                     f"not {type(value).__name__}")
