"""scriptc.nn: modules, parameters, functional and init, as torch.nn (one module per family, each
listing its layers in `__all__`)."""

from . import functional, init  # noqa: F401
from .activation import *  # noqa: F401,F403
from .attention import MultiheadAttention  # noqa: F401
from .batchnorm import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential  # noqa: F401
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .recurrent import GRUCell, LSTMCell  # noqa: F401
from .sparse import *  # noqa: F401,F403
from . import utils  # noqa: F401,E402


def __getattr__(name: str):
    from scriptc.torch_names import missing
    raise missing("torch.nn", "module 'scriptc.nn'", name, globals())
