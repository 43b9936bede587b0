"""torch.backends.mkldnn: oneDNN's flags (kept, unused: scriptc has no oneDNN backend)."""

from __future__ import annotations

enabled = True
deterministic = False


def is_available() -> bool:
    return False
