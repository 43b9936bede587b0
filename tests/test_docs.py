"""README.md and docs/ describe the repository as it is: every path they name exists, and nothing
they point at lies outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A path from the repository's root as the pages write it: `scriptc/runtime/plan.py`, `benchmarks/*.py`
# (a sentence's full stop after it is not part of it).
NAMED_PATH = re.compile(r"(?<![\w./-])((?:scriptc|examples|benchmarks|docs|tests)/[\w./*-]*[\w*])")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path that climbs out of where it is written (`../shared/DESIGN.md`); not the `.../ready` of a URL pattern.
CLIMBING = re.compile(r"(?<![\w.])\.\./")


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_pattern_reads_paths_as_the_pages_write_them():
    text = "see `scriptc/ops/subscript.py`, docs/deployment.md. and benchmarks/*.py; not myscriptc/x"
    assert NAMED_PATH.findall(text) == ["scriptc/ops/subscript.py", "docs/deployment.md", "benchmarks/*.py"]
    assert len(CLIMBING.findall("`../shared/DESIGN.md`, (../x) but not POST .../infer")) == 2


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_path_a_page_names_exists(page):
    missing = [p for p in sorted(set(NAMED_PATH.findall(page.read_text())))
               if not (any(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_links_stay_inside_the_repository_and_exist(page):
    text = page.read_text()
    assert CLIMBING.findall(text) == []
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|#", target):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(target)
    assert broken == []
