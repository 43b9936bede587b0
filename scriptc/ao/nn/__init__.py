"""torch.ao.nn: the quantized modules, and the fused float modules quantization starts from."""

from . import intrinsic, quantized  # noqa: F401
