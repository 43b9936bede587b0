"""Parameter: the Tensor subclass a Module registers as a parameter (torch.nn.Parameter)."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, _tensor_repr, wrap
from scriptc.tensors.core import _init
from scriptc.tensors.subclass import _disabled_torch_function_impl
from scriptc.types import default_float

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter; requires grad by default."""

    __torch_function__ = _disabled_torch_function_impl  # (ops on parameters give plain tensors, as torch's)

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
        return (Parameter, (wrap(self._data.copy()), self.requires_grad), self.__dict__ or None)

    def __deepcopy__(self, memo):
        # (torch's Parameter copies data and requires_grad only: attributes set on it stay behind)
        out = type(self)(wrap(self._data.copy()), self.requires_grad)
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """A tensor that registers as a buffer when assigned to a Module attribute
    (`self.mask = nn.Buffer(t)`); persistent=False keeps it out of the state_dict."""

    __torch_function__ = _disabled_torch_function_impl

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = wrap(np.empty((0,), dtype=default_float().np))
        self = object.__new__(cls)
        _init(self, data._data)
        self._vc = data._vc
        self.requires_grad = data.requires_grad
        self.persistent = persistent
        return self

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        pass

    def plain(self) -> Tensor:
        """The tensor the module keeps: this one's storage, without the Buffer marker."""
        out = wrap(self._data)
        out._vc, out.requires_grad = self._vc, self.requires_grad
        return out
