"""torch.backends.cuda: CUDA matmul precision switches (kept; scriptc's CUDA matmul uses cuBLAS defaults) and the
switches saying which scaled_dot_product_attention kernels may run."""

from __future__ import annotations

import contextlib
import warnings


class _MatmulFlags:
    """torch.backends.cuda.matmul: allow_tf32 (another face of torch.set_float32_matmul_precision: True is
    "high", False "highest", as in torch) and the reduced-precision reduction switches."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        from scriptc import settings

        return settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        from scriptc import settings

        settings.set_float32_matmul_precision("high" if value else "highest")


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether scriptc can run CUDA kernels (cupy installed); see scriptc.cuda.is_available() for a GPU."""
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


# Which scaled_dot_product_attention kernels may run, as torch keeps them (torch.nn.attention.sdpa_kernel
# and the switches below set them). On the CPU, torch has the math kernel and a flash kernel; scriptc
# computes both as the math kernel, so these only decide whether a call is refused as torch refuses it.
_SDP_ENABLED = {"cudnn": True, "flash": True, "mem_efficient": True, "math": True, "overrideable": True}


def _sdp_switch(name: str, described: str):
    def enable(enabled: bool) -> None:
        _SDP_ENABLED[name] = bool(enabled)

    def is_enabled() -> bool:
        return _SDP_ENABLED[name]

    enable.__name__ = enable.__qualname__ = f"enable_{name}_sdp"
    enable.__doc__ = f"Allow (True) or forbid (False) the {described} kernel of scaled_dot_product_attention."
    is_enabled.__name__ = is_enabled.__qualname__ = f"{name}_sdp_enabled"
    is_enabled.__doc__ = f"Whether the {described} kernel of scaled_dot_product_attention may run."
    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _sdp_switch("flash", "flash attention")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switch("mem_efficient", "memory-efficient attention")
enable_math_sdp, math_sdp_enabled = _sdp_switch("math", "math (reference)")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switch("cudnn", "cuDNN attention")


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Deprecated (torch.nn.attention.sdpa_kernel replaces it): a context manager allowing only the
    scaled_dot_product_attention kernels named True inside its block; the previous switches come back after it."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=2)
    return _switched(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)


@contextlib.contextmanager
def _switched(**enabled: bool):
    previous = dict(_SDP_ENABLED)
    _SDP_ENABLED.update(enabled)
    try:
        yield {}
    finally:
        _SDP_ENABLED.update(previous)


def cpu_sdp_kernel(flash_fits: bool) -> str:
    """The kernel torch's CPU scaled_dot_product_attention picks for a call ("flash" before "math", as its
    priority order has them, where the flash kernel can run the call), or its refusal when the allowed
    kernels cannot run it."""
    if _SDP_ENABLED["flash"] and flash_fits:
        return "flash"
    if _SDP_ENABLED["math"]:
        return "math"
    if not _SDP_ENABLED["flash"]:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    raise RuntimeError("No available kernel.  Aborting execution.")
