"""torch.version: what this build is. scriptc runs on the CPU only (no CUDA, ROCm or XPU runtime)."""

from scriptc import __version__

__all__ = ["__version__", "cuda", "debug", "hip", "rocm", "xpu"]

cuda: str | None = None  # the CUDA toolkit version a build was compiled against: none
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
debug = False  # a release build
