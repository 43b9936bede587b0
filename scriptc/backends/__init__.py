"""torch.backends: the switches of the native backends (cuDNN, MPS, CUDA matmul) model code sets or reads.

scriptc has none of these backends: the flags are accepted and kept (so code that sets
`torch.backends.cudnn.benchmark = True` runs), and every is_available() is False.
"""

from __future__ import annotations

from . import cuda, cudnn, mkldnn, mps, quantized  # noqa: F401

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "quantized"]
