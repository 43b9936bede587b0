"""torch.autograd.Variable: the pre-0.4 wrapper, kept by PyTorch for old code.

`Variable(t, requires_grad=False)` gives a tensor sharing t's data without its history; every
Tensor is an instance of Variable.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        from scriptc.tensors import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False): `data` detached, with requires_grad set."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        from scriptc.tensors import Tensor, wrap

        if data is None:
            out = wrap(np.zeros((0,), dtype=np.float32))
        elif isinstance(data, Tensor):
            out = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return out.requires_grad_(requires_grad) if requires_grad else out
