"""atheris harness for archive loading (long runs outside CI):

    pip install atheris && python tests/fuzz/fuzz_archive.py -max_total_time=600

Every input must load or raise ArchiveError; anything else is a crash atheris reports.
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from scriptc.errors import ArchiveError
    from scriptc.runtime import load

_PATH = os.path.join(tempfile.mkdtemp(prefix="scriptc-fuzz-"), "input.sc")


def test_one_input(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    try:
        load(_PATH, jit=False)
    except ArchiveError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
