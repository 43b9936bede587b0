"""jit.script compile time: a generated 200-line module, and the whole test corpus.

Target (issue: jit.script): the 200-line module compiles in under 0.5 s.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time

import scriptc as torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def two_hundred_line_module() -> torch.nn.Module:
    lines = ["import scriptc as torch", "import scriptc.nn as nn", "import scriptc.nn.functional as F", "",
             "class Big(nn.Module):", "    def __init__(self):", "        super().__init__()",
             "        self.fc = nn.Linear(8, 8)", "", "    def forward(self, x, n: int):", "        y = x"]
    body = []
    i = 0
    while len(lines) + len(body) < 196:
        body += [f"        if n > {i % 7}:", f"            y = F.relu(self.fc(y)) + {i}", "        else:",
                 f"            y = y * {i % 5 + 1} - x", f"        for j in range({i % 3 + 1}):",
                 "            y = y + j"]
        i += 1
    lines += body + ["        return y", ""]
    fd, path = tempfile.mkstemp(suffix=".py", prefix="big_module_")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines))
    spec = importlib.util.spec_from_file_location("big_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Big(), len(lines)


def main():
    model, n_lines = two_hundred_line_module()
    torch.jit.script(model)  # warm the lark parser tables
    start = time.perf_counter()
    scripted = torch.jit.script(model)
    big = time.perf_counter() - start
    from tests.jit.script_corpus import CORPUS, MODULES
    start = time.perf_counter()
    for name, (make, _) in CORPUS.items():
        torch.jit.script(make() if name in MODULES else make)
    corpus = time.perf_counter() - start
    print("jit.script compile time")
    print(f"{'case':<40}{'seconds':>10}{'target':>10}")
    print(f"{f'{n_lines}-line module ({len(scripted.graph)} nodes)':<40}{big:>10.3f}{'< 0.5':>10}")
    print(f"{f'test corpus ({len(CORPUS)} functions/modules)':<40}{corpus:>10.3f}{'-':>10}")


if __name__ == "__main__":
    main()
