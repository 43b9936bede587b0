"""Room for deep nesting: legal programs can nest 500 levels (a chain of conditional expressions is
500 nested prim::If blocks), and the script parser, the compiler, the IR printer and parser walk
them recursively. CPython 3.11 runs Python-to-Python recursion without growing the C stack."""

from __future__ import annotations

import sys
from contextlib import contextmanager

RECURSION_LIMIT = 20000


@contextmanager
def deep_recursion():
    """Raise the recursion limit (never lower it) while the block runs."""
    old = sys.getrecursionlimit()
    if old < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
