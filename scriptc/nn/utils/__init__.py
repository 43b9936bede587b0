"""scriptc.nn.utils: helpers for recurrent inputs (rnn), gradients and parameters, as torch.nn.utils."""

from . import rnn  # noqa: F401
