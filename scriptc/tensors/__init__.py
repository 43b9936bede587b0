"""Tensor: a numpy array with PyTorch's dtype rules, views, version counters and autograd.

Every op reaches its kernel through `call(op, args)`, one lookup in the op
table: cast to the promoted dtype, run the kernel, wrap the result, record
a Node for autograd when an input requires grad, and tell the tracer.

The package by concern: core (the Tensor class, Size, wrapping arrays), conversion (to Python,
numpy, dtypes and devices), dispatch (call, call_inplace), creation (tensor, as_tensor,
from_numpy), indexing, printing.
"""

from scriptc.tensors.core import Size, Tensor, wrap
from scriptc.tensors.creation import as_tensor, from_numpy, tensor
from scriptc.tensors.dispatch import call
from scriptc.types import device, dtype

# Reached from elsewhere in scriptc: the tracer hook (jit sets it), the in-place dispatch and
# factory-argument helpers (bindings, nn.functional), Parameter's repr, and _rebuild, which
# pickled tensors name.
from scriptc.tensors.core import _rebuild, _tracer  # noqa: F401
from scriptc.tensors.conversion import check_device_arg  # noqa: F401
from scriptc.tensors.creation import _size_arg  # noqa: F401
from scriptc.tensors.dispatch import call_inplace  # noqa: F401
from scriptc.tensors.printing import _tensor_repr  # noqa: F401

__all__ = ["Tensor", "Size", "tensor", "from_numpy", "as_tensor", "wrap", "call", "dtype", "device"]

# Tensor's op methods and operators are generated from the op table.
from scriptc import bindings  # noqa: E402,F401
