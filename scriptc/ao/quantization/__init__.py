"""torch.ao.quantization: dynamic quantization (quantize_dynamic), its qconfigs and observers; module
fusion (fuse_modules) and the stubs a quantizable float model carries. Static quantization (prepare /
convert with calibration) is not supported and says so."""

from .observer import (  # noqa: F401
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)
from .fuse_modules import fuse_known_modules, fuse_modules, get_fuser_method  # noqa: F401
from .qconfig import QConfig, default_dynamic_qconfig, float16_dynamic_qconfig, per_channel_dynamic_qconfig  # noqa: F401
from .quantize import (  # noqa: F401
    convert,
    get_default_dynamic_quant_module_mappings,
    prepare,
    propagate_qconfig_,
    quantize,
    quantize_dynamic,
)
from .stubs import DeQuantStub, QuantStub  # noqa: F401

__all__ = ["MinMaxObserver", "ObserverBase", "PerChannelMinMaxObserver", "PlaceholderObserver",
           "default_dynamic_quant_observer", "default_per_channel_weight_observer", "default_weight_observer",
           "QConfig", "default_dynamic_qconfig", "float16_dynamic_qconfig", "per_channel_dynamic_qconfig",
           "convert", "get_default_dynamic_quant_module_mappings", "prepare", "propagate_qconfig_", "quantize",
           "quantize_dynamic", "fuse_modules", "fuse_known_modules", "get_fuser_method", "QuantStub", "DeQuantStub"]
