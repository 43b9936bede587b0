"""scriptc.nn.functional: PyTorch's functional API, one module per family (each lists its names in
`__all__`).

Each function calls one op-table op of the same name, with the op's argument names (so scripted
code calls the op), or is a short composition of ops written in the script subset.
"""

from .activation import *  # noqa: F401,F403
from .annotations import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .attention import _canonical_mask  # noqa: F401  (the Transformer layers canonicalise their masks with it)
from .loss import _legacy_reduction  # noqa: F401  (the loss modules read size_average/reduce with it)
from .recurrent import _gru_cell, _lstm_cell_hidden, _lstm_cell_state  # noqa: F401  (the recurrent layers' cells)


def __getattr__(name: str):
    from scriptc.torch_names import missing
    raise missing("torch.nn.functional", "module 'scriptc.nn.functional'", name, globals())
