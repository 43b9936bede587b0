"""The meta device: tensors with a shape and a dtype but no data (torch's `device="meta"`).

A meta tensor's array is a MetaArray (scriptc.ops.meta). An op with a meta input computes nothing:
its outputs are MetaArrays of the shapes and dtypes its op-table shape rule gives. Reading values
(item, tolist, numpy, printing them) is torch's error.
"""

from __future__ import annotations

from scriptc import settings
from scriptc.ops.meta import MetaArray, meta_array
from scriptc.ops.rules import Unknown
from scriptc.types import TensorType, device


def on_meta(value) -> bool:
    """Whether a device argument (a device, a string or an int) names the meta device; None stands
    for the default device (`with torch.device("meta"):` makes it meta)."""
    if value is None:
        return settings.get_default_device().type == "meta"
    if isinstance(value, device):
        return value.type == "meta"
    return isinstance(value, str) and device(value).type == "meta"


def no_data_error() -> NotImplementedError:
    """What torch raises when a meta tensor's values are copied out (tolist, to("cpu"), copy_)."""
    return NotImplementedError("Cannot copy out of meta tensor; no data!")


def item_error() -> RuntimeError:
    return RuntimeError("Tensor.item() cannot be called on meta tensors")


def numpy_error() -> TypeError:
    return TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                     "host memory first.")


def meta_outputs(op, args: tuple, check_devices: bool = True):
    """The op's outputs on the meta device, from its shape rule: one MetaArray, or a tuple (list) of
    them as the kernel would give. A tensor argument on the CPU (other than a 0-d one, which torch
    takes as a number) is torch's device mismatch; an op whose output sizes depend on the data
    (nonzero, unique, masked_select) or that answers with a Python value is torch's
    NotImplementedError."""
    from scriptc.tensors.core import Tensor

    if check_devices:
        _check_devices(op, args, Tensor)
    metas = [_meta_of(a, Tensor) for a in args]
    result = op.shape(*metas)
    arrays = _arrays_of(op, result)
    if op.aux:
        return arrays, None
    return arrays


def _check_devices(op, args: tuple, tensor_class) -> None:
    # (index tensors may stay on the CPU, as torch's meta kernels take them: x[cpu_index], gather)
    tensors = [t for i in op.array_args + op.tensor_list_args
               if i < len(args) and op.schema.args[i].name not in _INDEX_ARGUMENTS
               for t in (args[i] if type(args[i]) in (list, tuple) else (args[i],))
               if isinstance(t, tensor_class) and (t._data.ndim > 0 or type(t._data) is MetaArray)]
    for t in tensors:
        if type(t._data) is not type(tensors[0]._data):
            found, expected = (("meta", "cpu") if type(t._data) is MetaArray else ("cpu", "meta"))
            raise RuntimeError(f"Tensor on device {found} is not on the expected device {expected}!")


_INDEX_ARGUMENTS = ("index", "indices")


def _meta_of(value, tensor_class):
    """What a shape rule takes for an argument: a TensorType for a tensor (also inside a list)."""
    if isinstance(value, tensor_class):
        return TensorType(value.dtype, tuple(value._data.shape))
    if type(value) in (list, tuple) and any(isinstance(v, tensor_class) for v in value):
        return type(value)(_meta_of(v, tensor_class) for v in value)
    return value


def _arrays_of(op, result):
    if isinstance(result, TensorType):
        if result.dtype is None or result.shape is None or any(type(d) is not int for d in result.shape):
            raise _no_meta_kernel(op)
        return meta_array(result.shape, result.dtype.np)
    if isinstance(result, (tuple, list)) and result and not any(isinstance(r, Unknown) for r in result):
        return type(result)(_arrays_of(op, r) for r in result)
    raise _no_meta_kernel(op)


def _no_meta_kernel(op) -> NotImplementedError:
    return NotImplementedError(f"aten::{op.base_name}: attempted to run this operator with Meta tensors, but "
                               "its output sizes depend on the input's values (or it answers with one), "
                               "which a meta tensor does not have")
