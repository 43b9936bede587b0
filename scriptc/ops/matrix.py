"""Helpers the matrix op modules share: torch's dtype names in messages, conjugates, batch checks, rules."""

from __future__ import annotations

import numbers

import numpy as np

from scriptc.types import TensorType

from .rules import Unknown

# PyTorch's ScalarType names, as its error messages print them.
_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble", "bfloat16": "BFloat16"}


def torch_name(dtype) -> str:
    """'Float' for float32 (a numpy dtype or a scriptc dtype), as PyTorch names types in its errors."""
    name = getattr(dtype, "name", str(dtype))
    return _TORCH_NAMES.get(name, name)


# The C type names some PyTorch messages print instead (caffe2's TypeMeta names).
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "bfloat16": "c10::BFloat16"}


def c_type_name(dtype) -> str:
    """'float' for float32, as PyTorch messages that print a TypeMeta name it."""
    name = getattr(dtype, "name", str(dtype))
    return _C_NAMES.get(name, name)


def conj(x):
    """The complex conjugate; real arrays are returned as they are (no copy)."""
    return x.conj() if x.dtype.kind == "c" else x


def mT(x):
    """The last two dims swapped (a view)."""
    return x.swapaxes(-1, -2)


def mH(x):
    """The conjugate transpose of the last two dims."""
    return conj(x.swapaxes(-1, -2))


def same_dtype(message: str, *arrays) -> None:
    """RuntimeError(message formatted with the torch names of the dtypes) unless all dtypes agree."""
    if any(a.dtype != arrays[0].dtype for a in arrays[1:]):
        raise RuntimeError(message.format(*[torch_name(a.dtype) for a in arrays]))


def require_floating(x, op_name: str, what: str = "A") -> None:
    """torch.linalg's check that an input is floating point or complex."""
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{op_name}: Expected a floating point or complex tensor as input. Got "
                           f"{torch_name(x.dtype)}")


def require_matrix(x, op_name: str, what: str = "A", square: bool = False) -> None:
    """torch.linalg's checks: at least 2 dims, and square when asked."""
    if x.ndim < 2:
        raise RuntimeError(f"{op_name}: The input tensor {what} must have at least 2 dimensions.")
    if square and x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{op_name}: {what} must be batches of square matrices, but they are "
                           f"{x.shape[-2]} by {x.shape[-1]} matrices")


def real_dtype(np_dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128; real dtypes unchanged."""
    return np.dtype(np_dtype).type(0).real.dtype


def real_type(t: TensorType):
    """The real dtype of a tensor type (float32 for complex64), or None when unknown."""
    return t.dtype.to_real() if t.dtype is not None else None


def known(*types) -> bool:
    """Every TensorType among `types` has a fully known, integer shape."""
    return all(t.shape is not None and all(isinstance(d, int) for d in t.shape) for t in types
               if isinstance(t, TensorType))


def out_type(like: TensorType, shape, dtype=None) -> TensorType:
    """A result type on `like`'s device: its dtype unless given, and `shape` (None = unknown; a size the
    graph computes, which reaches a rule as an Unknown, is an unknown dim)."""
    dims = None if shape is None or isinstance(shape, Unknown) else tuple(_dim(d) for d in shape)
    return TensorType(like.dtype if dtype is None else dtype, dims, like.device)


def _dim(size):
    if isinstance(size, (numbers.Integral, str)) and not isinstance(size, bool):
        return size if isinstance(size, str) else int(size)
    return None


def shape_rule(compute_shape, dtype_of=None):
    """A shape rule from `compute_shape(*int_shapes_or_values)`; unknown shapes give an unknown result.

    `dtype_of(*args)` picks the result dtype (default: the first tensor's)."""
    def rule(*args):
        tensors = [a for a in args if isinstance(a, TensorType)]
        first = tensors[0] if tensors else TensorType()
        dtype = dtype_of(*args) if dtype_of is not None else first.dtype
        if not known(*args):
            return out_type(first, None, dtype)
        shapes = [tuple(a.shape) if isinstance(a, TensorType) else a for a in args]
        return out_type(first, compute_shape(*shapes), dtype)
    return rule
