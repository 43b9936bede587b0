"""scriptc.nn: modules, parameters, functional and init, as torch.nn (one module per family, each
listing its layers in `__all__`)."""

from . import common_types, functional, init  # noqa: F401
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .attention import MultiheadAttention  # noqa: F401
from .batchnorm import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import Module, Parameter  # noqa: F401
from .parameter import Buffer  # noqa: F401
from .lazy import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from . import grad, parallel, utils  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
from . import modules  # noqa: F401,E402


def __getattr__(name: str):
    if name == "quantized":  # torch.nn.quantized: the older name of torch.ao.nn.quantized
        from scriptc.ao.nn import quantized
        return quantized
    from scriptc.torch_names import missing
    raise missing("torch.nn", "module 'scriptc.nn'", name, globals())
