"""scriptc.optim: SGD, Adam and AdamW with PyTorch's exact update rules."""

from .optimizer import SGD, Adam, AdamW, Optimizer  # noqa: F401
