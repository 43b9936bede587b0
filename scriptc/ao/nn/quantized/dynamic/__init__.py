"""torch.ao.nn.quantized.dynamic: modules with int8 weights whose activations are quantized per call,
what quantize_dynamic puts in place of nn.Linear, nn.LSTM, nn.GRU and the RNN cells."""

from .cells import GRUCell, LSTMCell, RNNCell  # noqa: F401
from .linear import Linear  # noqa: F401
from .rnn import GRU, LSTM, PackedParameter  # noqa: F401

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]
