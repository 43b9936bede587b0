"""scriptc.utils: torch.utils' helpers (hooks, checkpoint, data)."""

from . import checkpoint  # noqa: F401
from . import hooks  # noqa: F401
