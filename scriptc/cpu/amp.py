"""torch.cpu.amp: the deprecated CPU spellings of torch.amp's autocast and GradScaler."""

from scriptc.amp.deprecated import CPU_AUTOCAST as autocast
from scriptc.amp.deprecated import CPU_GRAD_SCALER as GradScaler

__all__ = ["autocast", "GradScaler"]
