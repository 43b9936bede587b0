"""torch.amp: automatic mixed precision (autocast regions and gradient scaling)."""

from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler
from .state import is_autocast_available

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
