"""torch's `out=` argument of the generated `scriptc.<op>` functions (torch.add(x, y, out=result))."""

from __future__ import annotations

import warnings

from scriptc.ops.rules import scalar_type_name
from scriptc.ops.schema import FACTORY, RANDOM, OpDef
from scriptc.tensors import Tensor, call
from scriptc.tensors.dispatch import wants_grad
from scriptc.types import TensorType


def takes_out(op: OpDef) -> bool:
    """Whether the function of `op` takes out=: a pure op with one Tensor result."""
    returns = op.schema.returns
    return (op.inplace_of is None and len(returns) == 1 and isinstance(returns[0], TensorType)
            and all(a.name != "out" for a in op.schema.args))


def into_out(op: OpDef, args: tuple, out) -> Tensor:
    """Compute `op(*args)` into `out` as torch does: `out` is resized to the result's shape (warning
    when it had elements), the result cast to its dtype where type promotion allows, and returned.
    Autograd does not flow through out=, so torch refuses it when an argument requires grad."""
    name = op.base_name
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if wants_grad((out, *args)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    result = call(op, args)
    if op.kind not in (FACTORY, RANDOM) and result.dtype.category > out.dtype.category:
        # (a factory makes its values in the out tensor's dtype: torch.arange(3, out=long_tensor))
        raise RuntimeError(f"result type {scalar_type_name(result.dtype)} can't be cast to the desired output type "
                           f"{scalar_type_name(out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(result.shape)
    out.copy_(result)
    return out
