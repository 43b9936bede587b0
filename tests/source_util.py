"""Define functions from generated source text (jit.script reads source, so it must live in a file)."""

from __future__ import annotations

import importlib.util
import linecache
import os
import tempfile
import textwrap

HEADER = "import scriptc as torch\nimport math\nfrom typing import Dict, List, Optional, Tuple\n\n"


def define(source: str, name: str | None = None):
    """The function named `name` (or the first one) defined by `source`."""
    text = HEADER + textwrap.dedent(source)
    fd, path = tempfile.mkstemp(suffix=".py", prefix="generated_")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("generated", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        os.unlink(path)
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)  # the file is gone
    functions = [v for v in vars(module).values() if callable(v) and getattr(v, "__module__", None) == "generated"]
    if name is not None:
        return getattr(module, name)
    return functions[0]
