"""torch.cuda.amp: the deprecated CUDA spellings of torch.amp (scriptc.cuda registers this module as
its `amp`)."""

from .deprecated import CUDA_AUTOCAST as autocast
from .deprecated import CUDA_GRAD_SCALER as GradScaler
from .deprecated import cuda_custom_bwd as custom_bwd
from .deprecated import cuda_custom_fwd as custom_fwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
