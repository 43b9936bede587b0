"""scriptc.nn: modules, parameters, functional and init, as torch.nn."""

from . import functional, init  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .layers import (  # noqa: F401
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm2d,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    GELU,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    MSELoss,
    NLLLoss,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential  # noqa: F401
from .recurrent import GRUCell, LSTMCell  # noqa: F401
from . import utils  # noqa: F401,E402
