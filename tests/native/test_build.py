"""Each native piece is cached under a fingerprint of its own sources: editing one changes neither the
kernels' fingerprint nor another piece's."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import scriptc

PRINT_FINGERPRINTS = ("from scriptc.codegen.llvm import driver; from scriptc.native import build; "
                      "print(driver.CODEGEN_FINGERPRINT, build.fingerprint('native/jsonnum'), "
                      "build.fingerprint('native/gemm', 'native/loops', 'native/threads', 'codegen/llvm/loop'))")


def _fingerprints(root: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PRINT_FINGERPRINTS], capture_output=True, text=True, check=True,
                         cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    return out.stdout.split()


def test_editing_the_json_scan_changes_its_fingerprint_alone(tmp_path):
    package = Path(scriptc.__file__).parent
    shutil.copytree(package, tmp_path / "scriptc", ignore=shutil.ignore_patterns("__pycache__"))
    before = _fingerprints(tmp_path)
    scan = tmp_path / "scriptc" / "native" / "jsonnum.py"
    scan.write_text(scan.read_text() + "\n# an edit\n")
    after = _fingerprints(tmp_path)
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1] != before[1]
    lowering = tmp_path / "scriptc" / "codegen" / "llvm" / "lower.py"
    lowering.write_text(lowering.read_text() + "\n# an edit\n")
    edited = _fingerprints(tmp_path)
    assert edited[0] != after[0] and edited[1:] == after[1:]
