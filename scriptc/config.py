"""Every environment setting scriptc reads, in one place."""

from __future__ import annotations

import os
from pathlib import Path


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def dump_after() -> str | None:
    """SCRIPTC_DUMP=<pass>|all: print the graph after the named pass (or every pass)."""
    return os.environ.get("SCRIPTC_DUMP") or None


def debug() -> bool:
    """SCRIPTC_DEBUG=1: verify the graph after every pass."""
    return _flag("SCRIPTC_DEBUG", False)


def jit_enabled() -> bool:
    """SCRIPTC_JIT=0 runs optimized graphs in the reference interpreter instead of compiled code."""
    return _flag("SCRIPTC_JIT", True)


def cache_enabled() -> bool:
    """SCRIPTC_CACHE=0 disables the on-disk kernel cache."""
    return _flag("SCRIPTC_CACHE", True)


def cache_dir() -> Path:
    """SCRIPTC_CACHE_DIR, default ~/.cache/scriptc."""
    return Path(os.environ.get("SCRIPTC_CACHE_DIR") or Path.home() / ".cache" / "scriptc")
