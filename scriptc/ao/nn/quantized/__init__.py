"""torch.ao.nn.quantized: scriptc has the dynamically quantized modules (`dynamic`) and FloatFunctional
(the float ops of a quantizable model); statically quantized modules are not supported."""

from . import dynamic  # noqa: F401
from .dynamic.linear import LinearPackedParams  # noqa: F401
from .functional_modules import FloatFunctional  # noqa: F401
