"""torch.fft: discrete Fourier transforms, their sample frequencies and fftshift.

Each function is the op of the table named `fft_<name>`, as in ATen.
"""

from scriptc import bindings as _bindings
from scriptc.torch_names import missing_attribute as _missing_attribute

globals().update(_bindings.namespace("fft_", __name__))


def __dir__():
    return sorted(name for name in globals() if not name.startswith("_"))


__getattr__ = _missing_attribute("torch.fft", __name__)
