"""torch.nn.modules, the package torch keeps its layers in, for code that imports them from there
(`from torch.nn.modules.batchnorm import _BatchNorm`, `from torch.nn.modules.utils import _pair`,
torchvision's RAFT): each submodule holds what torch's does - scriptc.nn's module of that family
(`utils` is scriptc.nn.common, the tuple normalizers), with the layers scriptc keeps in another family
(MultiheadAttention in attention, the Lazy layers in lazy) - and the layers are here by name."""

import importlib
import sys
import types

from scriptc.nn import *  # noqa: F401,F403  (torch.nn.modules exports every layer class)

_FAMILIES = ("activation", "adaptive", "batchnorm", "container", "conv", "distance", "dropout", "flatten", "fold",
             "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding", "pixelshuffle", "pooling",
             "rnn", "sparse", "transformer", "upsampling", "utils")
# torch's family: (scriptc.nn's module of it, {another scriptc.nn module: the prefix of the names taken from it})
_SOURCES = {"utils": ("common", {}), "activation": ("activation", {"attention": "MultiheadAttention"}),
            "batchnorm": ("batchnorm", {"lazy": "LazyBatchNorm"}), "conv": ("conv", {"lazy": "LazyConv"}),
            "instancenorm": ("instancenorm", {"lazy": "LazyInstanceNorm"}), "linear": ("linear", {"lazy": "LazyLinear"})}


def _family(name: str) -> types.ModuleType:
    source, extras = _SOURCES.get(name, (name, {}))
    module = importlib.import_module(f"scriptc.nn.{source}")
    if not extras:
        return module
    combined = types.ModuleType(f"{__name__}.{name}", module.__doc__)
    combined.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    for other, prefix in extras.items():
        extra = importlib.import_module(f"scriptc.nn.{other}")
        combined.__dict__.update({k: v for k, v in vars(extra).items() if k.startswith(prefix)})
    return combined


for _name in _FAMILIES:
    globals()[_name] = sys.modules[f"{__name__}.{_name}"] = _family(_name)
