"""The dynamically quantized RNN cells (torch.ao.nn.quantized.dynamic.LSTMCell / GRUCell / RNNCell): one
step whose input and hidden projections are dynamically quantized linears with reduce_range (torch's
quantized_*_cell_dynamic), the gates float."""

from __future__ import annotations

from typing import Optional, Tuple

import scriptc
from scriptc import nn
from scriptc.tensors import Tensor
from scriptc.types import qint8

from ....quantization.observer import quantize_weight
from .linear import check_float_recurrent, quantized_linear_dynamic, register_quantized, weight_observer_for
from .rnn import gru_step, lstm_step

__all__ = ["LSTMCell", "GRUCell", "RNNCell"]


class _DynamicCellBase(nn.Module):
    """What the quantized cells share: (weight, bias) per projection, saved in the state_dict as
    `_packed_weight_ih` / `_packed_weight_hh` (torch keeps packed C++ objects there), from_float, checks."""

    _FLOAT_MODULE: type = nn.Module
    _GATES = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=qint8):
        super().__init__()
        if dtype is not qint8:
            raise NotImplementedError(f"scriptc's dynamic quantized cells support dtype torch.qint8, got {dtype}")
        self.input_size, self.hidden_size, self.bias, self.weight_dtype = input_size, hidden_size, bias, dtype
        gates = self._GATES * hidden_size
        self.set_weight_bias(scriptc.quantize_per_tensor(scriptc.randn(gates, input_size), 1.0, 0, qint8),
                             scriptc.quantize_per_tensor(scriptc.randn(gates, hidden_size), 1.0, 0, qint8),
                             scriptc.randn(gates) if bias else None, scriptc.randn(gates) if bias else None)

    def set_weight_bias(self, w_ih: Tensor, w_hh: Tensor, b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> None:
        self._packed_weight_ih, self._packed_weight_hh = (w_ih, b_ih), (w_hh, b_hh)
        register_quantized(self, "w_ih", w_ih, "b_ih", b_ih)
        register_quantized(self, "w_hh", w_hh, "b_hh", b_hh)

    def _get_name(self) -> str:
        return "DynamicQuantized" + self._FLOAT_MODULE.__name__

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_weight_ih"] = self._packed_weight_ih
        destination[prefix + "_packed_weight_hh"] = self._packed_weight_hh

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        keys = (prefix + "_packed_weight_ih", prefix + "_packed_weight_hh")
        if all(key in state_dict for key in keys):
            (w_ih, b_ih), (w_hh, b_hh) = (state_dict.pop(key) for key in keys)
            self.set_weight_bias(w_ih, w_hh, b_ih, b_hh)
        elif strict:
            missing_keys.extend(key for key in keys if key not in state_dict)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized counterpart of a float cell that carries a `qconfig`."""
        check_float_recurrent(cls, mod)
        extra = {"nonlinearity": mod.nonlinearity} if cls is RNNCell else {}
        cell = cls(mod.input_size, mod.hidden_size, mod.bias, **extra)

        def quantized(weight):
            observer = weight_observer_for(mod)
            observer(weight)
            return quantize_weight(weight.detach(), observer)

        cell.set_weight_bias(quantized(mod.weight_ih), quantized(mod.weight_hh), mod.bias_ih, mod.bias_hh)
        return cell

    def _check(self, input: Tensor, hx: Tensor, which: str) -> None:
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)}, expected {self.input_size}")
        if input.size(0) != hx.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{which} batch size "
                               f"{hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"hidden{which} has inconsistent hidden_size: got {hx.size(1)}, expected "
                               f"{self.hidden_size}")

    def _projections(self, input: Tensor, hx: Tensor) -> Tuple[Tensor, Tensor]:
        return (quantized_linear_dynamic(input, self.w_ih_integers, self.w_ih_scales, self.w_ih_zero_points,
                                         self.b_ih, True),
                quantized_linear_dynamic(hx, self.w_hh_integers, self.w_hh_scales, self.w_hh_zero_points,
                                         self.b_hh, True))


class LSTMCell(_DynamicCellBase):
    """An LSTM cell whose weights are qint8: (h_1, c_1) from a (batch, input_size) input and (h_0, c_0)."""

    _FLOAT_MODULE = nn.LSTMCell
    _GATES = 4

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        if hx is None:
            zeros = input.new_zeros([input.size(0), self.hidden_size])
            hx = (zeros, zeros)
        self._check(input, hx[0], "[0]")
        self._check(input, hx[1], "[1]")
        projected_input, projected_hidden = self._projections(input, hx[0])
        return lstm_step(projected_input, projected_hidden, hx[1])


class GRUCell(_DynamicCellBase):
    """A GRU cell whose weights are qint8: h_1 from a (batch, input_size) input and h_0."""

    _FLOAT_MODULE = nn.GRUCell
    _GATES = 3

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        if hx is None:
            hx = input.new_zeros([input.size(0), self.hidden_size])
        self._check(input, hx, "")
        projected_input, projected_hidden = self._projections(input, hx)
        return gru_step(projected_input, projected_hidden, hx)


class RNNCell(_DynamicCellBase):
    """An Elman RNN cell (tanh or relu) whose weights are qint8: h_1 from a (batch, input_size) input and h_0."""

    _FLOAT_MODULE = nn.RNNCell

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype=qint8):
        super().__init__(input_size, hidden_size, bias, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        if hx is None:
            hx = input.new_zeros([input.size(0), self.hidden_size])
        self._check(input, hx, "")
        projected_input, projected_hidden = self._projections(input, hx)
        pre = projected_hidden + projected_input
        if self.nonlinearity == "tanh":
            return pre.tanh()
        if self.nonlinearity == "relu":
            return pre.relu()
        raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
