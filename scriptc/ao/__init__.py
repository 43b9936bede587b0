"""torch.ao: dynamic quantization (`scriptc.ao.quantization.quantize_dynamic`) and the quantized modules it
puts into a model (`scriptc.ao.nn.quantized.dynamic`)."""

from . import nn, quantization  # noqa: F401
