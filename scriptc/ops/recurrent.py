"""The pointwise arithmetic of recurrent cells, as ops: an LSTM's new cell state and hidden state, a GRU's new
hidden state, each from its gates' pre-activations (chunks of the input and hidden projections).

Written as sigmoid, tanh, mul and add ops, one LSTM step is ten eager calls and ten autograd nodes, each a
pass over memory; as these ops it is two of each (one for a GRU), with the gradient written once. They are
pointwise with scalar expressions built from the table's sigmoid and tanh, so fusion compiles a traced step
as it did the ops they replace. Each kernel keeps its activations (`aux`) for the gradient.
"""

from __future__ import annotations

from . import OPS, register
from .pointwise import _sigmoid
from .schema import POINTWISE, PROMOTE_FLOAT


def _sigmoid_expr(x):
    return OPS["sigmoid"].scalar(x)


def _tanh_expr(x):
    return OPS["tanh"].scalar(x)


def _lstm_cell_state_kernel(xp, ingate, forgetgate, cellgate, cx):
    i, f, g = _sigmoid(xp, ingate), _sigmoid(xp, forgetgate), xp.tanh(cellgate)
    cy = f * cx
    cy += i * g
    return cy, (i, f, g)


def _lstm_cell_state_grad(ctx, grad):
    i, f, g = ctx.aux
    return grad * g * i * (1 - i), grad * ctx.cx * f * (1 - f), grad * i * (1 - g * g), grad * f


register("_lstm_cell_state(ingate: Tensor, forgetgate: Tensor, cellgate: Tensor, cx: Tensor) -> Tensor", POINTWISE,
         _lstm_cell_state_kernel, dtype_rule=PROMOTE_FLOAT,
         scalar=lambda i, f, g, c: _sigmoid_expr(f) * c + _sigmoid_expr(i) * _tanh_expr(g),
         grad=_lstm_cell_state_grad, save=("cx",), aux=True, method=False, function=False,
         doc="An LSTM's next cell state from its gates' pre-activations: sigmoid(f) * cx + sigmoid(i) * tanh(g).")


def _lstm_cell_hidden_kernel(xp, outgate, cy):
    o, c = _sigmoid(xp, outgate), xp.tanh(cy)
    return o * c, (o, c)


def _lstm_cell_hidden_grad(ctx, grad):
    o, c = ctx.aux
    return grad * c * o * (1 - o), grad * o * (1 - c * c)


register("_lstm_cell_hidden(outgate: Tensor, cy: Tensor) -> Tensor", POINTWISE, _lstm_cell_hidden_kernel,
         dtype_rule=PROMOTE_FLOAT, scalar=lambda o, c: _sigmoid_expr(o) * _tanh_expr(c),
         grad=_lstm_cell_hidden_grad, aux=True, method=False, function=False,
         doc="An LSTM's next hidden state from its output gate's pre-activation and the new cell state: "
             "sigmoid(o) * tanh(cy).")


def _gru_cell_kernel(xp, input_r, input_z, input_n, hidden_r, hidden_z, hidden_n, hx):
    r, z = _sigmoid(xp, input_r + hidden_r), _sigmoid(xp, input_z + hidden_z)
    n = xp.tanh(input_n + r * hidden_n)
    return n + z * (hx - n), (r, z, n)


def _gru_cell_grad(ctx, grad):
    r, z, n = ctx.aux
    through_n = grad * (1 - z) * (1 - n * n)
    through_r = through_n * ctx.hidden_n * r * (1 - r)
    through_z = grad * (ctx.hx - n) * z * (1 - z)
    return through_r, through_z, through_n, through_r, through_z, through_n * r, grad * z


def _gru_expr(input_r, input_z, input_n, hidden_r, hidden_z, hidden_n, hx):
    r, z = _sigmoid_expr(input_r + hidden_r), _sigmoid_expr(input_z + hidden_z)
    n = _tanh_expr(input_n + r * hidden_n)
    return n + z * (hx - n)


register("_gru_cell(input_r: Tensor, input_z: Tensor, input_n: Tensor, hidden_r: Tensor, hidden_z: Tensor, "
         "hidden_n: Tensor, hx: Tensor) -> Tensor", POINTWISE, _gru_cell_kernel, dtype_rule=PROMOTE_FLOAT,
         scalar=_gru_expr,
         grad=_gru_cell_grad, save=("hidden_n", "hx"), aux=True, method=False, function=False,
         doc="A GRU's next hidden state from the input and hidden projections' r, z, n chunks: "
             "n + z * (hx - n), r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z), n = tanh(i_n + r * h_n).")
