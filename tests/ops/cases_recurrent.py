"""Op-table cases for the recurrent cells' pointwise ops (scriptc/ops/recurrent.py); torch has them only
inside its fused cells, so its spelling is the composition of sigmoid, tanh, mul and add they replace."""

from __future__ import annotations

import numpy as np

from .cases import Case, rand


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_cell_state(i, f, g, c):
    return _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)


def _lstm_cell_hidden(o, c):
    return _sigmoid(o) * np.tanh(c)


def _gru_cell(input_r, input_z, input_n, hidden_r, hidden_z, hidden_n, hx, sigmoid=_sigmoid, tanh=np.tanh):
    r, z = sigmoid(input_r + hidden_r), sigmoid(input_z + hidden_z)
    n = tanh(input_n + r * hidden_n)
    return n + z * (hx - n)


CASES: dict[str, list[Case]] = {
    "_lstm_cell_state": [
        Case((rand(3, 4), rand(3, 4), rand(3, 4), rand(3, 4)), _lstm_cell_state,
             torch=lambda T, i, f, g, c: T.sigmoid(f) * c + T.sigmoid(i) * T.tanh(g)),
        Case((rand(2, 1, 4), rand(4), rand(3, 1), rand(2, 3, 4, lo=-8, hi=8)), _lstm_cell_state, label="broadcast",
             torch=lambda T, i, f, g, c: T.sigmoid(f) * c + T.sigmoid(i) * T.tanh(g)),
        Case((rand(0, 4), rand(0, 4), rand(0, 4), rand(0, 4)), _lstm_cell_state, label="empty",
             torch=lambda T, i, f, g, c: T.sigmoid(f) * c + T.sigmoid(i) * T.tanh(g))],
    "_lstm_cell_hidden": [
        Case((rand(3, 4), rand(3, 4)), _lstm_cell_hidden, torch=lambda T, o, c: T.sigmoid(o) * T.tanh(c)),
        Case((rand(2, 3, 4, lo=-30, hi=30), rand(4)), _lstm_cell_hidden, label="broadcast, saturated",
             torch=lambda T, o, c: T.sigmoid(o) * T.tanh(c))],
    "_gru_cell": [
        Case(tuple(rand(3, 4) for _ in range(7)), _gru_cell,
             torch=lambda T, *a: _gru_cell(*a, sigmoid=T.sigmoid, tanh=T.tanh)),
        Case((rand(3, 4), rand(4), rand(3, 4), rand(3, 1), rand(3, 4), rand(4), rand(2, 3, 4)), _gru_cell,
             label="broadcast", torch=lambda T, *a: _gru_cell(*a, sigmoid=T.sigmoid, tanh=T.tanh))],
}
