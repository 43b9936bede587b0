"""Scalar ops about tensors: sizes (and torch._shape_as_tensor, the sizes as a tensor), conversions to
Python numbers, properties read in scripted code, torch.tensor() and torch.autograd.grad() in scripted code."""

from __future__ import annotations

import numpy as np

from scriptc.types import (
    Bool,
    DeviceT,
    DTYPES_BY_NUMBER,
    DType,
    Float,
    Int,
    ListType,
    OptionalType,
    SCALAR_TYPE_NUMBERS,
    Scalar,
    Str,
    TensorType,
    device,
    dtype as ScalarDType,
    from_numpy_dtype,
    int64,
    scalar_dtype,
)

from . import register
from .pyvalues import fixed, python_op
from .rules import normalize_dim
from .schema import OPAQUE, SCALAR


def _size_kernel(xp, x, dim):
    return int(x.shape[normalize_dim(dim, x.ndim, "size")])


def _tensor_op(schema: str, kernel, result, doc: str = "") -> None:
    register(schema, SCALAR, kernel, shape=lambda *metas: result, method=False, function=False, doc=doc)


_tensor_op("size(self: Tensor, dim: int) -> int", _size_kernel, Int, "The size of one dim.")
_tensor_op("size.all(self: Tensor) -> int[]", lambda xp, x: [int(d) for d in x.shape], ListType(Int))
_tensor_op("dim(self: Tensor) -> int", lambda xp, x: int(x.ndim), Int)
_tensor_op("numel(self: Tensor) -> int", lambda xp, x: int(x.size), Int)
_tensor_op("len.tensor(self: Tensor) -> int", lambda xp, x: _length(x), Int, "len(tensor): the size of dim 0.")
register("_shape_as_tensor(self: Tensor) -> Tensor", OPAQUE, lambda xp, x: xp.asarray(x.shape, dtype=np.int64),
         shape=lambda x: TensorType(int64, None if x.shape is None else (len(x.shape),), x.device),
         method=False, doc="The sizes of `self` as a 1-d int64 tensor, recorded by jit.trace as an op on `self` "
         "(torch.onnx.operators.shape_as_tensor): sizes read from it follow the input in the trace.")
register("item(self: Tensor) -> Scalar", SCALAR, lambda xp, x: _one_element(x), method=False, function=False,
         shape=lambda x: Float if getattr(x, "dtype", None) is not None and x.dtype.is_floating_point else
         (Bool if getattr(x, "dtype", None) is not None and x.dtype.name == "bool" else
          (Int if getattr(x, "dtype", None) is not None else Scalar)))


def _length(x) -> int:
    if x.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return int(x.shape[0])


def _one_element(x):
    if x.size != 1:
        raise RuntimeError(f"a Tensor with {x.size} elements cannot be converted to Scalar")
    return x.reshape(()).item()


def _truth(x) -> bool:
    """A tensor's truth value, which only a one-element tensor has (torch's words otherwise)."""
    if x.size != 1:
        amount = "no values" if x.size == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
    return bool(x.reshape(()).item())


_tensor_op("bool.tensor(self: Tensor) -> bool", lambda xp, x: _truth(x), Bool,
           "bool(tensor): a one-element tensor's truth.")
_tensor_op("int.tensor(self: Tensor) -> int", lambda xp, x: int(_one_element(x)), Int)
_tensor_op("float.tensor(self: Tensor) -> float", lambda xp, x: float(_one_element(x)), Float)
def _implicit_number(xp, x, kind: str):
    """A tensor passed where a number is declared (TorchScript's ImplicitTensorToNum): 0-d only, and a
    floating or bool one not where an int is declared."""
    if x.ndim != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar argument")
    if kind == "int" and x.dtype.kind in "fcb":
        from .matrix import torch_name
        raise RuntimeError(f"Cannot input a tensor of type {torch_name(x.dtype)} as an integral argument")
    value = x.item()
    return {"int": int, "float": float, "bool": bool}.get(kind, lambda v: v)(value)


register("number.tensor(self: Tensor, kind: str) -> Scalar", SCALAR, _implicit_number, method=False, function=False,
         shape=lambda x, kind: {"int": Int, "float": Float, "bool": Bool}.get(kind, Scalar),
         doc="A 0-d tensor read as the int, float or Scalar an argument declares (`kind`).")
_tensor_op("dtype(self: Tensor) -> ScalarType", lambda xp, x: from_numpy_dtype(x.dtype), DType,
           "Tensor.dtype in scripted code.")


def _dtype_of_number(number: int) -> ScalarDType:
    if number not in DTYPES_BY_NUMBER:
        raise RuntimeError(f"ScalarType {number} is not a dtype scriptc has (known: {sorted(DTYPES_BY_NUMBER)})")
    return DTYPES_BY_NUMBER[number]


python_op("dtype.int(number: int) -> ScalarType", _dtype_of_number, fixed(DType),
          "An int where scripted code passes a ScalarType (`x.to(6)`, `dtype=d` of an int d): the dtype of "
          "that ScalarType number, as TorchScript, whose dtypes are ints, takes it.")
python_op("int.dtype(self: ScalarType) -> int", lambda d: SCALAR_TYPE_NUMBERS[d], fixed(Int),
          "A dtype where scripted code takes an int (`x.dtype == 6`, `-> int`): its ScalarType number.")
_tensor_op("device.tensor(self: Tensor) -> Device", lambda xp, x: device("cpu" if xp is np else "cuda"), DeviceT,
           "Tensor.device in scripted code.")
_tensor_op("type.device(self: Device) -> str", lambda xp, d: d.type, Str, "Device.type in scripted code.")
_tensor_op("index.device(self: Device) -> int?", lambda xp, d: d.index, OptionalType(Int))
python_op("device.str(type: str, index: int? = None) -> Device",
          lambda kind, index: device(kind) if index is None else device(kind, index), fixed(DeviceT),
          "torch.device('cpu') in scripted code; also a str where a Device is declared.")
_tensor_op("is_cuda.tensor(self: Tensor) -> bool", lambda xp, x: xp is not np, Bool)
_tensor_op("is_cpu.tensor(self: Tensor) -> bool", lambda xp, x: xp is np, Bool)
_tensor_op("requires_grad.tensor(self: Tensor) -> bool", lambda xp, x: bool(getattr(x, "requires_grad", False)),
           Bool, "Tensor.requires_grad (False for the arrays the runtime computes on).")
_tensor_op("retains_grad.tensor(self: Tensor) -> bool", lambda xp, x: bool(getattr(x, "retains_grad", False)), Bool)
_tensor_op("is_leaf.tensor(self: Tensor) -> bool", lambda xp, x: getattr(x, "grad_fn", None) is None, Bool)
_tensor_op("grad.tensor(self: Tensor) -> Tensor?", lambda xp, x: getattr(x, "grad", None),
           OptionalType(TensorType()), "Tensor.grad (None for the arrays the runtime computes on).")
_tensor_op("reversed_dims.tensor(self: Tensor) -> int[]", lambda xp, x: list(range(x.ndim - 1, -1, -1)), ListType(Int),
           "The permutation Tensor.T applies.")
# element kind -> (the name torch's mismatch error gives it, the numpy dtype kinds it takes)
_TOLIST_KINDS = {"int": ("Long", "iu"), "float": ("Float", "f"), "bool": ("Bool", "b"), "complex": ("Complex", "c")}


def _tolist(xp, x, dims: int = -1, kind: str = ""):
    """Tensor.tolist() as the annotation declares it: `dims` nested lists of `kind` (-1, "": unchecked,
    as archives written before the check hold it)."""
    if dims >= 0 and x.ndim != dims:
        raise RuntimeError("Output annotation list dimension and runtime tensor dimension must match for tolist()")
    if kind and x.dtype.kind not in _TOLIST_KINDS[kind][1]:
        from .matrix import torch_name
        raise RuntimeError("Output annotation element type and runtime tensor element type must match for tolist(): "
                           f"{_TOLIST_KINDS[kind][0]} vs {torch_name(x.dtype)}")
    return x.tolist() if hasattr(x, "tolist") else x


register("tolist.tensor(self: Tensor, dims: int = -1, kind: str = '') -> Any", SCALAR, _tolist, method=False,
         function=False, shape=lambda *metas: None,
         doc="Tensor.tolist(); its type is the annotation the compiler was given (`dims` lists of `kind`).")


def _tensor_data(xp, data, dtype, requires_grad):
    """torch.tensor(data): ints give int64, floats float32, bools bool, complex complex64."""
    if hasattr(data, "shape") and hasattr(data, "dtype") and not isinstance(data, (list, tuple)):
        array = xp.array(data, copy=True)
    else:
        array = xp.asarray(data)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        elif array.dtype.kind == "c":
            array = array.astype(np.complex64)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
        elif array.size == 0 and array.dtype.kind != "b":
            array = array.astype(np.float32)
        elif array.dtype == object:
            raise TypeError("torch.tensor(): data must be a number or a (nested) list of numbers")
    return array.astype(dtype.np) if dtype is not None else array


register("tensor.data(data: Any, dtype: ScalarType?, requires_grad: bool) -> Tensor", SCALAR, _tensor_data,
         shape=lambda data, dtype, requires_grad: TensorType(dtype if isinstance(dtype, ScalarDType) else None),
         method=False, function=False, doc="torch.tensor(data, dtype=) in scripted code.")


def _scalar_tensor(xp, value):
    return xp.asarray(value, dtype=scalar_dtype(value).np) if not isinstance(value, complex) else \
        xp.asarray(value, dtype=np.complex64)


_tensor_op("scalar_tensor.scalar(value: Any) -> Tensor", _scalar_tensor, TensorType(),
           "A number as a 0-d tensor of its default dtype (for `2 - x` where the op takes no scalar first).")


def _autograd_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    from scriptc.autograd import grad

    if not all(hasattr(t, "grad_fn") for t in list(outputs) + list(inputs)):
        raise RuntimeError("torch.autograd.grad in scripted code needs tensors that require grad (call the "
                           "scripted function from Python with such tensors)")
    return list(grad(outputs, inputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                     allow_unused=allow_unused))


python_op("grad.autograd(outputs: Tensor[], inputs: Tensor[], grad_outputs: Any, retain_graph: bool?, "
          "create_graph: bool, allow_unused: bool) -> Tensor?[]", _autograd_grad,
          fixed(ListType(OptionalType(TensorType()))), "torch.autograd.grad in scripted code.")
python_op("name.enum(self: Any) -> str", lambda member: member.name, fixed(Str), "An Enum member's .name.")
python_op("value.enum(self: Any) -> Any", lambda member: member.value, lambda member: member.value,
          "An Enum member's .value (its type is the Enum's value type).")


def _write_out_type(out, value):
    if isinstance(out, TensorType) and isinstance(value, TensorType):
        return TensorType(out.dtype, value.shape, out.device)  # out's dtype, the result's shape
    return TensorType()


def _write_out(xp, out, value):
    """torch's out= rule: the result written into `out`, which is resized first when its shape differs."""
    target = getattr(out, "_data", out)  # the Tensor itself in an autograd run (as list ops get theirs)
    value = xp.asarray(getattr(value, "_data", value))
    if target.shape != value.shape:
        try:
            target.resize(value.shape, refcheck=False)
        except ValueError:
            raise RuntimeError(f"out= tensor of shape {list(target.shape)} cannot be resized to the result's "
                               f"{list(value.shape)} (it is a view of another tensor)") from None
    xp.copyto(target, value, casting="same_kind")
    return out


register("write_out(out: Tensor, value: Tensor) -> Tensor", SCALAR, _write_out, method=False, function=False,
         shape=lambda out, value: _write_out_type(getattr(out, "type", out), getattr(value, "type", value)),
         mutates=("out",), doc="f(..., out=t): the result written into t (resized when its shape differs).")


# Tensor predicates and sizes read in scripted code (x.is_complex(), x.element_size(), x.nbytes)
_tensor_op("is_complex.tensor(self: Tensor) -> bool", lambda xp, x: x.dtype.kind == "c", Bool)
_tensor_op("is_floating_point.tensor(self: Tensor) -> bool", lambda xp, x: x.dtype.kind == "f" or
           x.dtype.name == "bfloat16", Bool)
_tensor_op("is_signed.tensor(self: Tensor) -> bool", lambda xp, x: x.dtype.kind in "ifc", Bool)
_tensor_op("element_size.tensor(self: Tensor) -> int", lambda xp, x: int(x.itemsize), Int,
           "Bytes per element (also x.itemsize).")
_tensor_op("nbytes.tensor(self: Tensor) -> int", lambda xp, x: int(x.nbytes), Int)
_tensor_op("stride.tensor(self: Tensor, dim: int) -> int",
           lambda xp, x, dim: int(x.strides[normalize_dim(dim, x.ndim, "stride")] // x.itemsize), Int,
           "x.stride(dim): the elements between neighbours along dim.")
_tensor_op("stride.all(self: Tensor) -> int[]", lambda xp, x: [int(s // x.itemsize) for s in x.strides],
           ListType(Int), "x.stride(): the stride of every dim.")
_tensor_op("is_nonzero.tensor(self: Tensor) -> bool", lambda xp, x: _truth(x), Bool)
_tensor_op("is_same_size.tensor(self: Tensor, other: Tensor) -> bool", lambda xp, x, y: x.shape == y.shape, Bool)
_tensor_op("get_device.tensor(self: Tensor) -> int", lambda xp, x: int(x.device.id) if hasattr(x, "device") and
           hasattr(x.device, "id") else -1, Int, "-1 on the CPU, else the GPU's index.")
