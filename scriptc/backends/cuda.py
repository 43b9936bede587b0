"""torch.backends.cuda: CUDA matmul precision switches (kept; scriptc's CUDA matmul uses cuBLAS defaults)."""

from __future__ import annotations


class _MatmulFlags:
    """torch.backends.cuda.matmul: allow_tf32 and the reduced-precision reduction switches."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether scriptc can run CUDA kernels (cupy installed); see scriptc.cuda.is_available() for a GPU."""
    import importlib.util

    return importlib.util.find_spec("cupy") is not None
