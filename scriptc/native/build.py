"""Compiles a native piece through the LLVM driver, cached under a fingerprint of its own sources."""

from __future__ import annotations

import functools
from pathlib import Path

from scriptc.codegen.llvm import driver

_PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def fingerprint(*sources: str) -> str:
    """A hash of the named modules of scriptc (`"native/gemm"` is scriptc/native/gemm.py)."""
    return driver.source_fingerprint(_PACKAGE / f"{name}.py" for name in sources)


def compiled(label: str, sources: tuple[str, ...], build_module, names: list[str]) -> dict[str, int]:
    """The addresses of `names` in the module build_module(triple) makes, compiled once per machine
    (or read from the disk cache), keyed by `label` and the fingerprint of `sources` - the modules
    whose code ends up in it (`"native/gemm"`, `"codegen/llvm/loop"`)."""
    return driver.compile_module(label, fingerprint(*sources), build_module, names)
