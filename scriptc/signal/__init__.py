"""torch.signal: window functions (torch.signal.windows)."""

from scriptc.signal import windows  # noqa: F401

__all__ = ["windows"]
