"""RNN, LSTM and GRU layers and their cells, with PyTorch's parameters, initialisation and call signatures.

A layer is built from op-table ops: one linear projects the input of every
time step at once, then each step is one matmul with the recurrent weights and
the gate arithmetic, so tracing, scripting and fusion see through it. Inputs
of any layout (time-major, batch_first, unbatched, PackedSequence) are turned
into one time-major (steps * batch, features) matrix whose per-step rows are
taken with a single split; a packed batch shrinks step by step, and the rows of
sequences that have ended (or, running backwards, not yet begun) keep their state.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import List, Optional, Tuple

import scriptc
from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .module import Module, Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Optional[Tensor],
               w_hr: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    """One LSTM step from the input's projection `gi`; gates i, f, g, o stacked in that order."""
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c_next = F._lstm_cell_state(i, f, g, c)
    h_next = F._lstm_cell_hidden(o, c_next)
    if w_hr is not None:
        h_next = F.linear(h_next, w_hr)
    return h_next, c_next


def _gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor]) -> Tensor:
    """One GRU step; gates r, z, n stacked in that order, n = tanh(x_n + r * (W_hn h + b_hn))."""
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    return F._gru_cell(i_r, i_z, i_n, h_r, h_z, h_n, h)


def _rnn_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor], relu: bool) -> Tensor:
    pre = gi + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def _uniform_in_hidden_scale(module: Module) -> None:
    """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), torch's recurrent initialisation."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


def _keep_rows(new: Tensor, old: Tensor) -> Tensor:
    """`new` for the first rows, `old` for the rest (sequences not running at this step)."""
    active, full = new.size(0), old.size(0)
    if active == full:
        return new
    return scriptc.cat([new, old.narrow(0, active, full - active)], 0)


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k},
    bias_hh_l{k} (and weight_hr_l{k} with proj_size), all initialised U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    __constants__ = [
        "mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional",
        "proj_size",
    ]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names: List[str] = []
        self._all_weights: List[List[str]] = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_empty(*shape, dtype=dtype, device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self._init_flat_weights()
        self.reset_parameters()

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if name in self.__dict__.get("_flat_weights_names", ()):
            self._init_flat_weights()

    def _init_flat_weights(self) -> None:
        """The weights in torch's order, as a plain list attribute (what the recurrence and scripting read)."""
        self._flat_weights = [getattr(self, name) for name in self._flat_weights_names]

    def _apply(self, fn, recurse: bool = True) -> "RNNBase":
        super()._apply(fn, recurse)
        self._init_flat_weights()
        return self

    @property
    def all_weights(self) -> List[List[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Kept for PyTorch compatibility: it compacts cuDNN weights on GPU; on CPU there is nothing to do."""

    def reset_parameters(self) -> None:
        _uniform_in_hidden_scale(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # --- argument checks, worded as torch's --------------------------------------------------
    def check_input(self, input: Tensor, batch_sizes: Optional[Tensor]) -> None:
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). Convert "
                             f"input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return self.num_layers * num_directions, mini_batch, size

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if list(hx.size()) != list(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Optional[Tensor]) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Optional[Tensor]) -> Tensor:
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # --- the recurrence ----------------------------------------------------------------------------
    def _prepare(self, input):
        """(time-major rows (N, features), batch, batch_sizes or None, sorted/unsorted indices, batched)."""
        if not isinstance(input, Tensor):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            return data, int(batch_sizes[0]), batch_sizes, sorted_indices, unsorted_indices, True
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        batch = input.size(0) if self.batch_first else input.size(1)
        return input, batch, None, None, None, batched

    def _run(self, input: Tensor, batch_sizes: Optional[Tensor], h0: Tensor,
             c0: Optional[Tensor]) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """Every layer and direction over the input; (output, h_n, c_n) with output like the input."""
        if scriptc.jit.is_tracing() and batch_sizes is not None:
            # a packed batch's steps are data (torch records one op taking batch_sizes): the trace
            # keeps this method as scripted code, its loop over them included, so it runs at lengths
            # it was not traced with
            from scriptc.jit.api import script_method

            return script_method(self, "_run")._run(input, batch_sizes, h0, c0)
        packed_sizes: Optional[List[int]] = None
        if batch_sizes is None:
            x = input.transpose(0, 1) if self.batch_first else input
            steps, batch = x.size(0), x.size(1)
            if steps == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            x = x.reshape(steps * batch, x.size(2))
        else:
            x = input
            sizes: List[int] = batch_sizes.tolist()
            packed_sizes = sizes
            steps, batch = len(sizes), sizes[0]
        if scriptc.jit.is_tracing():
            # torch records one op for the layers, which runs at any length: the trace keeps them as
            # scripted code with their loops over the steps, so it runs at lengths it did not see
            from scriptc.jit.api import script_method

            x, h_n, c_n = script_method(self, "_layers")._layers(x, packed_sizes, h0, c0)
        else:
            x, h_n, c_n = self._layers(x, packed_sizes, h0, c0)
        if batch_sizes is None:
            x = x.reshape(steps, batch, x.size(-1))
            if self.batch_first:
                x = x.transpose(0, 1)
        return x, h_n, c_n

    def _layers(self, x: Tensor, packed_sizes: Optional[List[int]], h0: Tensor,
                c0: Optional[Tensor]) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """Every layer and direction over the steps' rows `x` (each step's batch of rows, as many as
        h0 has, or a packed batch's `packed_sizes`); (output rows, h_n, c_n)."""
        batch = h0.size(1)
        num_directions = 2 if self.bidirectional else 1
        weights = self._flat_weights
        per = len(weights) // (self.num_layers * num_directions)
        h_last: List[Tensor] = []
        c_last: List[Tensor] = []
        for layer in range(self.num_layers):
            outputs: List[Tensor] = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                w = weights[index * per:(index + 1) * per]
                b_ih = w[2] if self.bias else None
                b_hh = w[3] if self.bias else None
                w_hr = w[-1] if self.proj_size > 0 else None
                c = None if c0 is None else c0[index]
                if b_ih is not None and b_hh is not None and self.mode != "GRU":
                    # both biases enter before the nonlinearity: add them once, not at every step
                    gi = F.linear(x, w[0], b_ih + b_hh)
                    step_bias: Optional[Tensor] = None
                else:
                    gi = F.linear(x, w[0], b_ih)
                    step_bias = b_hh
                pieces = gi.split(batch, 0) if packed_sizes is None else gi.split(packed_sizes, 0)
                out, h_n, c_n = self._direction(pieces, h0[index], c, w[1], step_bias, w_hr, direction == 1)
                outputs.append(out)
                h_last.append(h_n)
                if c_n is not None:
                    c_last.append(c_n)
            x = outputs[0] if num_directions == 1 else scriptc.cat(outputs, 1)
            if self.dropout > 0 and self.training and layer + 1 < self.num_layers:
                x = F.dropout(x, self.dropout, True)
        return x, scriptc.stack(h_last, 0), scriptc.stack(c_last, 0) if c_last else None

    def _direction(self, steps: List[Tensor], h: Tensor, c: Optional[Tensor], w_hh: Tensor, b_hh: Optional[Tensor],
                   w_hr: Optional[Tensor], reverse: bool) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """One direction of one layer; `steps` are the input projections of each step's running sequences."""
        outputs: List[Tensor] = []
        count = len(steps)
        for k in range(count):
            t = count - 1 - k if reverse else k
            g = steps[t]
            active = g.size(0)
            h_prev = h if active == h.size(0) else h.narrow(0, 0, active)
            if c is not None:
                c_prev = c if active == c.size(0) else c.narrow(0, 0, active)
                h_next, c_next = _lstm_step(g, h_prev, c_prev, w_hh, b_hh, w_hr)
                c = _keep_rows(c_next, c)
            elif self.mode == "GRU":
                h_next = _gru_step(g, h_prev, w_hh, b_hh)
            else:
                h_next = _rnn_step(g, h_prev, w_hh, b_hh, self.mode == "RNN_RELU")
            h = _keep_rows(h_next, h)
            outputs.append(h_next)
        if reverse:
            outputs.reverse()
        return scriptc.cat(outputs, 0), h, c

    def _zeros(self, input: Tensor, batch: int, size: int, batch_sizes: Optional[Tensor] = None) -> Tensor:
        if scriptc.jit.is_tracing() and batch_sizes is not None:
            # the trace sizes a packed batch's initial state from batch_sizes (data), not the traced batch
            from scriptc.jit.api import script_method

            return script_method(self, "_packed_zeros")._packed_zeros(input, batch_sizes, size)
        num_directions = 2 if self.bidirectional else 1
        return input.new_zeros([self.num_layers * num_directions, batch, size])

    def _packed_zeros(self, input: Tensor, batch_sizes: Tensor, size: int) -> Tensor:
        return self._zeros(input, int(batch_sizes[0]), size)

    def forward(self, input, hx: Optional[Tensor] = None):
        """(output, h_n); input (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in), or a PackedSequence."""
        x, batch, batch_sizes, sorted_indices, unsorted_indices, batched = self._prepare(input)
        hx = self._initial_hidden(x, hx, batch, batch_sizes, sorted_indices, batched)
        output, h_n, _ = self._run(x, batch_sizes, hx, None)
        if batch_sizes is not None:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(h_n, unsorted_indices)
        if not batched:
            return output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1)
        return output, h_n

    def _initial_hidden(self, x: Tensor, hx: Optional[Tensor], batch: int, batch_sizes: Optional[Tensor],
                        sorted_indices: Optional[Tensor], batched: bool) -> Tensor:
        if hx is None:
            hx = self._zeros(x, batch, self.hidden_size, batch_sizes)
        elif batch_sizes is None:
            expected = 3 if batched else 2
            if hx.dim() != expected:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx should also be {expected}-D but got {hx.dim()}-D tensor")
            if not batched:
                hx = hx.unsqueeze(1)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(x, hx, batch_sizes)
        return hx


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu), over num_layers layers."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

class GRU(RNNBase):
    """Gated recurrent unit layers: r, z gates and candidate n; h_t = (1 - z) * n + z * h_{t-1}."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory layers; with proj_size > 0 the hidden state is projected by weight_hr_l{k}."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        layers, batch, _ = self.get_expected_hidden_size(input, batch_sizes)
        return layers, batch, self.hidden_size

    def check_forward_args(self, input: Tensor, hidden: Tuple[Tensor, Tensor],  # type: ignore[override]
                           batch_sizes: Optional[Tensor]) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Tuple[Tensor, Tensor],  # type: ignore[override]
                       permutation: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        """(output, (h_n, c_n)); input (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in), or a PackedSequence."""
        x, batch, batch_sizes, sorted_indices, unsorted_indices, batched = self._prepare(input)
        if hx is None:
            h0 = self._zeros(x, batch, self.proj_size if self.proj_size > 0 else self.hidden_size, batch_sizes)
            c0 = self._zeros(x, batch, self.hidden_size, batch_sizes)
        else:
            h0, c0 = hx[0], hx[1]
            if batch_sizes is None:
                expected = 3 if batched else 2
                if h0.dim() != expected or c0.dim() != expected:
                    kind = "batched 3-D" if batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {expected}-D but got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                if not batched:
                    h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            else:
                h0, c0 = self.permute_hidden((h0, c0), sorted_indices)
        self.check_forward_args(x, (h0, c0), batch_sizes)
        output, h_n, c_cells = self._run(x, batch_sizes, h0, c0)
        c_n = c_cells if c_cells is not None else c0
        if batch_sizes is not None:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden((h_n, c_n), unsorted_indices)
        if not batched:
            return output.squeeze(0 if self.batch_first else 1), (h_n.squeeze(1), c_n.squeeze(1))
        return output, (h_n, c_n)


# --- cells ------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """What RNNCell, LSTMCell and GRUCell share: weight_ih, weight_hh, bias_ih, bias_hh."""
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(_empty(num_chunks * hidden_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(_empty(num_chunks * hidden_size, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(_empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(_empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_in_hidden_scale(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _check_input(self, input: Tensor) -> Tensor:
        """The input as a batch, after torch's rank check."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(-1)} expected {self.input_size}")
        return input if input.dim() == 2 else input.unsqueeze(0)

    def _batch_and_state(self, input: Tensor, hx: Optional[Tensor]) -> Tuple[Tensor, Tensor, bool]:
        """(input as a batch, the one hidden state as a batch (zeros when None), whether input was batched)."""
        if hx is not None:
            if hx.dim() not in (1, 2):
                raise ValueError(f"{type(self).__name__}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        batched = input.dim() == 2
        x = self._check_input(input)
        if hx is None:
            h = x.new_zeros([x.size(0), self.hidden_size])
        else:
            h = hx if batched else hx.unsqueeze(0)
        self._check_hidden(x, h, "hidden0")
        return x, h, batched

    def _check_hidden(self, input: Tensor, hx: Tensor, name: str) -> None:
        if input.size(0) != hx.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match {name} batch size {hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"{name} has inconsistent hidden_size: got {hx.size(1)}, expected {self.hidden_size}")


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, h, batched = self._batch_and_state(input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                        self.nonlinearity == "relu")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') = LSTMCell(x, (h, c)); gates i, f, g, o stacked in weight_ih/weight_hh rows."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        if hx is not None:
            for index, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{index}] to be 1D or 2D, got {value.dim()}D instead")
        batched = input.dim() == 2
        x = self._check_input(input)
        if hx is None:
            zeros = x.new_zeros([x.size(0), self.hidden_size])
            h, c = zeros, zeros
        else:
            h, c = (hx[0], hx[1]) if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_hidden(x, h, "hidden0")
        self._check_hidden(x, c, "hidden1")
        h_next, c_next = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh,
                                    None)
        if not batched:
            return h_next.squeeze(0), c_next.squeeze(0)
        return h_next, c_next


class GRUCell(RNNCellBase):
    """h' = GRUCell(x, h); gates r, z, n stacked in weight_ih/weight_hh rows."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, h, batched = self._batch_and_state(input, hx)
        out = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return out if batched else out.squeeze(0)
