"""The dynamically quantized LSTM and GRU (torch.ao.nn.quantized.dynamic.LSTM / GRU): each layer's input and
hidden projections are dynamically quantized linears (qint8 weights, activations quantized per call with
reduce_range, as torch's quantized_lstm / quantized_gru compute them); the gates stay float."""

from __future__ import annotations

from typing import List, Optional, Tuple

import scriptc
from scriptc import nn
from scriptc.nn import functional as F
from scriptc.nn.utils.rnn import PackedSequence
from scriptc.tensors import Tensor
from scriptc.types import qint8

from ....quantization.observer import quantize_weight
from .linear import check_float_recurrent, quantized_linear_dynamic, register_quantized, weight_observer_for

__all__ = ["LSTM", "GRU", "PackedParameter"]


class PackedParameter(nn.Module):
    """One layer-direction's quantized weights and float biases, `(w_ih, w_hh, b_ih, b_hh)`, saved in the
    state_dict under `param` (torch keeps a packed C++ object there). The weights' parts and the biases
    are its non-persistent buffers, what the LSTM's forward (traced or scripted) reads."""

    def __init__(self, param: tuple):
        super().__init__()
        self.set_param(param)

    def set_param(self, param: tuple) -> None:
        w_ih, w_hh, b_ih, b_hh = param
        self.param = (w_ih, w_hh, b_ih, b_hh)
        register_quantized(self, "w_ih", w_ih, "b_ih", b_ih)
        register_quantized(self, "w_hh", w_hh, "b_hh", b_hh)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.param

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        if prefix + "param" in state_dict:
            self.set_param(tuple(state_dict.pop(prefix + "param")))
        elif strict:
            missing_keys.append(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)


def lstm_step(projected_input: Tensor, projected_hidden: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
    """(h', c') of an LSTM from its input's and hidden state's projections (biases included), gates i, f, g, o."""
    i, f, g, o = (projected_hidden + projected_input).chunk(4, 1)
    c_next = F._lstm_cell_state(i, f, g, c)
    return F._lstm_cell_hidden(o, c_next), c_next


def gru_step(projected_input: Tensor, projected_hidden: Tensor, h: Tensor) -> Tensor:
    """h' of a GRU from its input's and hidden state's projections (biases included), gates r, z, n."""
    i_r, i_z, i_n = projected_input.chunk(3, 1)
    h_r, h_z, h_n = projected_hidden.chunk(3, 1)
    return F._gru_cell(i_r, i_z, i_n, h_r, h_z, h_n, h)


def _keep_rows(new: Tensor, old: Tensor) -> Tensor:
    """`new` for the first rows, `old` for the rest (sequences not running at this step)."""
    active, full = new.size(0), old.size(0)
    if active == full:
        return new
    return scriptc.cat([new, old.narrow(0, active, full - active)], 0)


def _direction(projected: List[Tensor], h: Tensor, c: Optional[Tensor], w_hh_integers: Tensor, w_hh_scales: Tensor,
               w_hh_zero_points: Tensor, b_hh: Optional[Tensor],
               reverse: bool) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """One direction of one layer over the steps' input projections (each step's running sequences): an
    LSTM's where there is a cell state `c`, a GRU's otherwise."""
    outputs: List[Tensor] = []
    count = len(projected)
    for k in range(count):
        t = count - 1 - k if reverse else k
        active = projected[t].size(0)
        h_prev = h.narrow(0, 0, active)
        hidden = quantized_linear_dynamic(h_prev, w_hh_integers, w_hh_scales, w_hh_zero_points, b_hh, True)
        if c is not None:
            h_next, c_next = lstm_step(projected[t], hidden, c.narrow(0, 0, active))
            c = _keep_rows(c_next, c)
        else:
            h_next = gru_step(projected[t], hidden, h_prev)
        h = _keep_rows(h_next, h)
        outputs.append(h_next)
    if reverse:
        outputs.reverse()
    return scriptc.cat(outputs, 0), h, c


class _DynamicRNNBase(nn.Module):
    """What the dynamically quantized LSTM and GRU share: the weights per layer and direction, printing,
    from_float, and the layers over a padded or packed batch."""

    _FLOAT_MODULE: type = nn.Module
    _GATES = 1
    _version = 2

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, dtype=qint8):
        super().__init__()
        if dtype is not qint8:
            raise NotImplementedError(f"scriptc's dynamic quantized {self.mode} supports dtype torch.qint8, "
                                      f"got {dtype}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.dtype, self.version = bidirectional, dtype, 2
        directions = 2 if bidirectional else 1
        gates = self._GATES * hidden_size
        params = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for _ in range(directions):
                w_ih = scriptc.quantize_per_tensor(scriptc.randn(gates, layer_input), 0.1, 0, qint8)
                w_hh = scriptc.quantize_per_tensor(scriptc.randn(gates, hidden_size), 0.1, 0, qint8)
                b_ih, b_hh = scriptc.randn(gates), scriptc.randn(gates)
                params.append(PackedParameter((w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh, None, None)))
        self._all_weight_values = nn.ModuleList(params)

    @property
    def mode(self) -> str:
        return self._FLOAT_MODULE.__name__

    def _get_name(self) -> str:
        return "DynamicQuantized" + self.mode

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            value = getattr(self, name)
            if value != default:
                s += f", {name}={value}"
        return s

    def __repr__(self) -> str:
        # torch hides the packed weights
        return f"{self._get_name()}({self.extra_repr()})"

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized counterpart of a float nn.LSTM / nn.GRU that carries a `qconfig`."""
        check_float_recurrent(cls, mod)
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("a dynamically quantized LSTM with proj_size is not supported by scriptc")
        quantized_module = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                               mod.dropout, mod.bidirectional)

        def quantized(weight):
            observer = weight_observer_for(mod)
            observer(weight)
            return quantize_weight(weight.detach(), observer)

        params = []
        for names in mod._all_weights:
            w_ih, w_hh, b_ih, b_hh = (getattr(mod, name) for name in names)
            params.append(PackedParameter((quantized(w_ih), quantized(w_hh), b_ih, b_hh)))
        quantized_module._all_weight_values = nn.ModuleList(params)
        return quantized_module

    # --- forward -----------------------------------------------------------------------------------------
    def _run(self, input, h0: Optional[Tensor], c0: Optional[Tensor], with_cell: bool):
        """(output like the input, h_n, c_n or None): input (L, N, H_in), (N, L, H_in) with batch_first, or
        a PackedSequence; missing initial states are zeros."""
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = batch_sizes.tolist()
            rows, batch = x, sizes[0]
        else:
            x, sorted_indices, unsorted_indices = input, None, None
            if x.dim() != 3:
                raise RuntimeError(f"input must have 3 dimensions, got {x.dim()}")
            if self.batch_first:
                x = x.transpose(0, 1)
            steps, batch = x.size(0), x.size(1)
            if steps == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            sizes = None  # every step has the whole batch
            rows = x.reshape(steps * batch, x.size(2))
        if rows.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {rows.size(-1)}")
        directions = 2 if self.bidirectional else 1
        expected = [self.num_layers * directions, batch, self.hidden_size]
        h0 = rows.new_zeros(expected) if h0 is None else h0
        if with_cell and c0 is None:
            c0 = rows.new_zeros(expected)
        if sorted_indices is not None:
            h0 = h0.index_select(1, sorted_indices)
            c0 = None if c0 is None else c0.index_select(1, sorted_indices)
        for i, state in enumerate((h0, c0)):
            if state is not None and list(state.size()) != expected:
                which = f"hidden[{i}] size" if with_cell else "hidden size"
                raise RuntimeError(f"Expected {which} {tuple(expected)}, got {list(state.size())}")
        if scriptc.jit.is_tracing():
            # the trace keeps the layers as scripted code with their loops over the steps, so it runs at
            # lengths it was not traced with (as nn.LSTM's)
            from scriptc.jit.api import script_method

            out, h_n, c_n = script_method(self, "_layers")._layers(rows, sizes, h0, c0)
        else:
            out, h_n, c_n = self._layers(rows, sizes, h0, c0)
        if packed:
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), h_n, c_n
        out = out.reshape(steps, batch, out.size(-1))
        return (out.transpose(0, 1) if self.batch_first else out), h_n, c_n

    def _layers(self, x: Tensor, sizes: Optional[List[int]], h0: Tensor,
                c0: Optional[Tensor]) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """Every layer and direction over the steps' rows `x`: `sizes[t]` rows at step t of a packed batch,
        the whole batch (as many rows as h0 has) at every step otherwise."""
        directions = 2 if self.bidirectional else 1
        h_last: List[Tensor] = []
        c_last: List[Tensor] = []
        outputs: List[Tensor] = []
        index = 0
        for cell in self._all_weight_values:
            # the whole sequence's input projection at once: one activation range, as torch's CPU path
            projection = quantized_linear_dynamic(x, cell.w_ih_integers, cell.w_ih_scales, cell.w_ih_zero_points,
                                                  cell.b_ih, True)
            projected = projection.split(h0.size(1), 0) if sizes is None else projection.split(sizes, 0)
            out, h, c = _direction(projected, h0[index], None if c0 is None else c0[index], cell.w_hh_integers,
                                   cell.w_hh_scales, cell.w_hh_zero_points, cell.b_hh, index % directions == 1)
            outputs.append(out)
            h_last.append(h)
            if c is not None:
                c_last.append(c)
            index += 1
            if len(outputs) == directions:
                x = outputs[0] if directions == 1 else scriptc.cat(outputs, 1)
                outputs = []
                if self.dropout > 0 and self.training and index < len(self._all_weight_values):
                    x = F.dropout(x, self.dropout, True)
        return x, scriptc.stack(h_last, 0), scriptc.stack(c_last, 0) if len(c_last) > 0 else None


class LSTM(_DynamicRNNBase):
    """An LSTM whose weights are qint8: quantize_dynamic's replacement for nn.LSTM. Takes what nn.LSTM
    takes (3-D input, batch_first, a PackedSequence, (h_0, c_0)) and returns (output, (h_n, c_n))."""

    _FLOAT_MODULE = nn.LSTM
    _GATES = 4

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        h0, c0 = (None, None) if hx is None else (hx[0], hx[1])
        output, h_n, c_n = self._run(input, h0, c0, True)
        assert c_n is not None
        return output, (h_n, c_n)


class GRU(_DynamicRNNBase):
    """A GRU whose weights are qint8: quantize_dynamic's replacement for nn.GRU. Takes what nn.GRU takes
    (3-D input, batch_first, a PackedSequence, h_0) and returns (output, h_n)."""

    _FLOAT_MODULE = nn.GRU
    _GATES = 3

    def forward(self, input, hx: Optional[Tensor] = None):
        output, h_n, _ = self._run(input, hx, None, False)
        return output, h_n
