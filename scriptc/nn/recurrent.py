"""LSTMCell and GRUCell: one step of a recurrent layer, with PyTorch's gate order and init."""

from __future__ import annotations

import math

import numpy as np

from scriptc.tensors import Tensor, wrap
from scriptc.types import float32

from . import functional as F
from . import init
from .module import Module, Parameter


class _CellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, gates: int, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        np_dtype = (dtype or float32).np
        self.weight_ih = Parameter(wrap(np.empty((gates * hidden_size, input_size), dtype=np_dtype)))
        self.weight_hh = Parameter(wrap(np.empty((gates * hidden_size, hidden_size), dtype=np_dtype)))
        if bias:
            self.bias_ih = Parameter(wrap(np.empty(gates * hidden_size, dtype=np_dtype)))
            self.bias_hh = Parameter(wrap(np.empty(gates * hidden_size, dtype=np_dtype)))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _check(self, input: Tensor) -> tuple[Tensor, bool]:
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")
        batched = input.dim() == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _zeros(self, input: Tensor) -> Tensor:
        return input.new_zeros([input.size(0), self.hidden_size])

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class LSTMCell(_CellBase):
    """(h', c') = LSTMCell(x, (h, c)); gates i, f, g, o stacked in weight_ih/weight_hh rows."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, batched = self._check(input)
        if hx is None:
            h, c = self._zeros(x), self._zeros(x)
        else:
            h, c = (hx[0], hx[1]) if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c_next = f * c + i * g
        h_next = o * c_next.tanh()
        if not batched:
            return h_next.squeeze(0), c_next.squeeze(0)
        return h_next, c_next


class GRUCell(_CellBase):
    """h' = GRUCell(x, h); gates r, z, n stacked in weight_ih/weight_hh rows."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._check(input)
        h = self._zeros(x) if hx is None else (hx if batched else hx.unsqueeze(0))
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        h_next = (1 - z) * n + z * h
        return h_next if batched else h_next.squeeze(0)
