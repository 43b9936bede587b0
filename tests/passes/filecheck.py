"""A small FileCheck: match printed IR against CHECK / CHECK-NEXT / CHECK-NOT / CHECK-COUNT-n lines."""

from __future__ import annotations

import re


def _pattern(text: str) -> re.Pattern:
    # {{...}} is a regex; everything else matches literally.
    parts = re.split(r"\{\{(.*?)\}\}", text.strip())
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def filecheck(ir_text: str, checks: str) -> None:
    """Raise AssertionError saying which directive failed and where."""
    lines = ir_text.splitlines()
    pos = 0
    pending_not: list[re.Pattern] = []
    for raw in checks.strip().splitlines():
        directive, _, body = raw.strip().partition(":")
        pattern = _pattern(body)
        if directive == "CHECK-NOT":
            pending_not.append(pattern)
            continue
        if directive.startswith("CHECK-COUNT-"):
            want = int(directive.rsplit("-", 1)[1])
            got = sum(1 for line in lines if pattern.search(line))
            assert got == want, f"{raw!r}: found {got} matches\n{ir_text}"
            continue
        start = pos
        if directive == "CHECK-NEXT":
            found = pos < len(lines) and pattern.search(lines[pos])
            index = pos if found else None
        elif directive == "CHECK":
            index = next((i for i in range(pos, len(lines)) if pattern.search(lines[i])), None)
        else:
            raise ValueError(f"unknown directive {directive}")
        assert index is not None, f"{raw!r} not found after line {pos}\n{ir_text}"
        for bad in pending_not:
            for line in lines[start:index]:
                assert not bad.search(line), f"CHECK-NOT {bad.pattern!r} matched {line!r}\n{ir_text}"
        pending_not = []
        pos = index + 1
    for bad in pending_not:
        for line in lines[pos:]:
            assert not bad.search(line), f"CHECK-NOT {bad.pattern!r} matched {line!r}\n{ir_text}"
