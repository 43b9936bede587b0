"""torch.ao.nn.quantized: scriptc has the dynamically quantized modules (`dynamic`); statically quantized
ones are not supported."""

from . import dynamic  # noqa: F401
from .dynamic.linear import LinearPackedParams  # noqa: F401
