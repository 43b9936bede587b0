"""scriptc.optim.lr_scheduler: torch.optim.lr_scheduler's schedules, equal to torch's at every step."""

from .base import LRScheduler, _LRScheduler  # noqa: F401
from .composite import ChainedScheduler, SequentialLR  # noqa: F401
from .cyclic import CyclicLR, OneCycleLR  # noqa: F401
from .decay import (  # noqa: F401
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau  # noqa: F401

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"]
