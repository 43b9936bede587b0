"""The command line's basics."""

import subprocess
import sys

import scriptc


def test_version():
    out = subprocess.run([sys.executable, "-m", "scriptc", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"scriptc {scriptc.__version__}"
