"""jit.script compile time: against function size (1k, 10k and 50k statements), per construct, for a
generated 200-line module and for the test corpus.

Targets (issue #29): a 50,000-statement function compiles in under 5 s, and compile time grows
linearly with size (the per-statement column stays flat); the 200-line module in under 0.5 s.
Wall and CPU seconds are both shown: on a shared machine the CPU column is the steadier one.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import tempfile
import time

import scriptc as torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

# One statement (or small block) of each construct family, repeated to make a function of it.
CONSTRUCTS = {
    "tensor arithmetic": ("t: torch.Tensor", "    t = t * 2 + t\n"),
    "int arithmetic": ("n: int", "    n = (n * 3 + 1) // 2 % 1000\n"),
    "if/else": ("n: int", "    if n > 3:\n        n = n - 1\n    else:\n        n = n + 2\n"),
    "for loop": ("n: int", "    for i in range(3):\n        n += i\n"),
    "list methods": ("xs: List[int]", "    xs.append(len(xs))\n    xs.insert(0, xs[-1])\n"),
    "str methods": ("s: str", "    s = s.strip().upper()[:8] + 'x'\n"),
    "dict ops": ("d: Dict[str, int]", "    d['k'] = d.get('k', 0) + 1\n"),
    "Optional refinement": ("o: Optional[int]", "    if o is not None:\n        o = o + 1\n"),
    "f-string": ("n: int", "    s = f'{n} and {n + 1}'\n"),
    "comprehension": ("n: int", "    ys = [i * n for i in range(4) if i > 1]\n"),
}


def _define(source: str, name: str):
    fd, path = tempfile.mkstemp(suffix=".py", prefix="script_bench_")
    with os.fdopen(fd, "w") as f:
        f.write("import scriptc as torch\nfrom typing import Dict, List, Optional\n\n" + source)
    spec = importlib.util.spec_from_file_location("script_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _timed(fn):
    gc.collect()  # the garbage of an earlier (big) graph is not this measurement's
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def straight_line(statements: int):
    body = "".join(f"    x = x + y * {i}\n" for i in range(statements))
    return _define(f"def f(x, y):\n{body}    return x\n", "f")


def two_hundred_line_module():
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
    torch.jit.script(straight_line(10))  # load the parser tables and the compiler's modules
    print("jit.script compile time against function size (x = x + y * i, repeated)")
    print(f"{'statements':>12}{'nodes':>10}{'wall s':>10}{'cpu s':>10}{'us/stmt (cpu)':>16}{'target':>10}")
    for n in (1_000, 10_000, 50_000):
        fn = straight_line(n)
        scripted, wall, cpu = _timed(lambda fn=fn: torch.jit.script(fn))
        print(f"{n:>12}{len(scripted.graph):>10}{wall:>10.2f}{cpu:>10.2f}{cpu / n * 1e6:>16.1f}"
              f"{'< 5 s' if n == 50_000 else '':>10}")
    print()
    print("compile cost per construct (a function of 500 of them)")
    print(f"{'construct':<24}{'us each (cpu)':>14}")
    for name, (params, text) in CONSTRUCTS.items():
        fn = _define(f"def f({params}):\n{text * 500}    return 0\n", "f")
        _, _, cpu = _timed(lambda fn=fn: torch.jit.script(fn))
        print(f"{name:<24}{cpu / 500 * 1e6:>14.1f}")
    print()
    model, n_lines = two_hundred_line_module()
    torch.jit.script(model)
    scripted, big, _ = _timed(lambda: torch.jit.script(model))
    from tests.jit.script_corpus import CORPUS, MODULES

    _, corpus, _ = _timed(lambda: [torch.jit.script(make() if name in MODULES else make)
                                   for name, (make, _) in CORPUS.items()])
    print(f"{'case':<40}{'seconds':>10}{'target':>10}")
    print(f"{f'{n_lines}-line module ({len(scripted.graph)} nodes)':<40}{big:>10.3f}{'< 0.5':>10}")
    print(f"{f'test corpus ({len(CORPUS)} functions/modules)':<40}{corpus:>10.3f}{'-':>10}")


if __name__ == "__main__":
    main()
