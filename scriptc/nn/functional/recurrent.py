"""The pointwise parts of recurrent cells (scriptc's own ops, which torch keeps inside its fused cells):
what nn.LSTM, nn.GRU and their cells call, by the op's name, so scripted code calls the op too."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op


def _lstm_cell_state(ingate: Tensor, forgetgate: Tensor, cellgate: Tensor, cx: Tensor) -> Tensor:
    return _op("_lstm_cell_state", ingate, forgetgate, cellgate, cx)


def _lstm_cell_hidden(outgate: Tensor, cy: Tensor) -> Tensor:
    return _op("_lstm_cell_hidden", outgate, cy)


def _gru_cell(input_r: Tensor, input_z: Tensor, input_n: Tensor, hidden_r: Tensor, hidden_z: Tensor,
              hidden_n: Tensor, hx: Tensor) -> Tensor:
    return _op("_gru_cell", input_r, input_z, input_n, hidden_r, hidden_z, hidden_n, hx)
