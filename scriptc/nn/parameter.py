"""Parameter: the Tensor subclass a Module registers as a parameter (torch.nn.Parameter)."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, _tensor_repr, wrap
from scriptc.types import default_float

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter; requires grad by default."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = wrap(np.empty((0,), dtype=default_float().np))
        self = object.__new__(cls)
        source = data._data if isinstance(data, Tensor) else np.asarray(data)
        self._data = source
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self._out_index = 0
        self._vc = data._vc if isinstance(data, Tensor) else [0]
        self._base = None
        return self

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + _tensor_repr(self)

    def __reduce_ex__(self, protocol):
        return (Parameter, (wrap(self._data.copy()), self.requires_grad))
