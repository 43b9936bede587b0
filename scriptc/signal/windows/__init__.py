"""torch.signal.windows: scipy-style window functions (sym=True gives the symmetric window, sym=False
the periodic one for spectral analysis), composed from linspace and pointwise ops in the requested
dtype, as PyTorch 2.13 computes them."""

from scriptc.signal.windows.windows import (
    bartlett,
    blackman,
    cosine,
    exponential,
    gaussian,
    general_cosine,
    general_hamming,
    hamming,
    hann,
    kaiser,
    nuttall,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
