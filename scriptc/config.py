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


def parser_cache(name: str) -> str | bool:
    """The file lark keeps grammar `name`'s LALR tables in (building them costs ~0.2 s a process;
    loading them, a few ms), or False when SCRIPTC_CACHE=0 or the cache directory cannot be made.
    Lark checks the grammar's, its own and Python's version in the file, and rebuilds a stale or
    corrupt one."""
    if not cache_enabled():
        return False
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(cache_dir() / f"{name}.lark-tables")
