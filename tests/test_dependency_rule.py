"""DESIGN.md's dependency rule, read from the sources: the deployment runtime never imports the
frontend, the eager layer or serving; serving runs on the runtime and never imports the frontend or
the eager layer either. (tests/runtime/test_archive.py checks what a loaded model pulls in.)"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scriptc"
EAGER_AND_FRONTEND = {"jit", "nn", "autograd", "optim", "tensors", "utils", "multiprocessing", "distributions",
                      "serialization", "bindings", "grad_mode", "linalg", "fft", "sparse", "random"}
FORBIDDEN = {"runtime": EAGER_AND_FRONTEND | {"serving", "cli"}, "serving": EAGER_AND_FRONTEND}


def _imported(path: Path) -> set[str]:
    """The scriptc subpackages or modules a source file imports (absolute or relative, at any depth
    of the file: a lazy import counts)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]  # ("scriptc", "runtime")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [module] + ([f"{module}.{alias.name}" for alias in node.names] if module == "scriptc" else [])
        for name in names:
            parts = name.split(".")
            if parts[0] == "scriptc" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer):
    offenders = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        bad = _imported(path) & FORBIDDEN[layer]
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = sorted(bad)
    assert offenders == {}


def test_serving_a_request_imports_nothing_above_the_runtime(tmp_path):
    pytest.importorskip("orjson")
    import scriptc as torch

    from .models import MLP
    path = tmp_path / "mlp.sc"
    torch.jit.trace(MLP().eval(), torch.randn(2, 16)).save(path)
    code = textwrap.dedent(f"""
        import json, sys
        from scriptc.runtime import load
        from scriptc.serving.batcher import run_batch
        from scriptc.serving.protocol import decode, encode, model_entry
        entry = model_entry("mlp", load({str(path)!r}))
        body = json.dumps({{"inputs": [{{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}}]}})
        request, inputs = decode(entry, body.encode(), None)
        assert json.loads(encode(entry, request, run_batch(entry, [inputs])[0])[0])["outputs"][0]["shape"] == [1, 4]
        top = {{m.split(".")[1] for m in sys.modules if m.startswith("scriptc.")}}
        print(",".join(sorted(top & set({sorted(EAGER_AND_FRONTEND)!r}))) or "clean")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "clean"
