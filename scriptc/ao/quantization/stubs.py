"""QuantStub and DeQuantStub: where a quantizable model's input is quantized and its output dequantized;
in a float model (before static quantization converts it) each is the identity."""

from __future__ import annotations

from scriptc import nn

__all__ = ["QuantStub", "DeQuantStub"]


class _Stub(nn.Module):
    """The identity until a model is converted, holding the qconfig it was given (where one was)."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Marks where a float tensor would be quantized: the identity until a model is converted."""


class DeQuantStub(_Stub):
    """Marks where a quantized tensor would be dequantized: the identity until a model is converted."""
