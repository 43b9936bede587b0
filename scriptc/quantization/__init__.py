"""torch.quantization: the older name of torch.ao.quantization (quantize_dynamic and its qconfigs)."""

from scriptc.ao.quantization import *  # noqa: F401,F403
from scriptc.ao.quantization import __all__  # noqa: F401
