"""IR scaling: trace, print and parse time for straight-line graphs of 1k, 10k and 50k nodes.

Target (issue: the IR): each grows linearly, i.e. the time ratio 10k/1k and 50k/10k stays within
1.5x of the node-count ratio (10 and 5). The last columns print ratio / node ratio (<= 1.5 passes).
"""

from __future__ import annotations

import sys
import time

import scriptc as torch
from scriptc import ir

sys.setrecursionlimit(10000)


def chain(n_ops: int):
    def fn(x):
        for i in range(n_ops):
            x = x * 1.0001 if i % 2 else x + 0.5
        return x
    return fn


def measure(n_ops: int) -> dict:
    x = torch.ones(4)
    start = time.perf_counter()
    traced = torch.jit.trace(chain(n_ops), x, check_trace=False)
    t_trace = time.perf_counter() - start
    graph = traced.graph
    t_print = float("inf")
    for _ in range(3):  # best of 3: printing 1k nodes takes only milliseconds
        start = time.perf_counter()
        text = str(graph)
        t_print = min(t_print, time.perf_counter() - start)
    start = time.perf_counter()
    ir.parse(text)
    t_parse = time.perf_counter() - start
    return {"nodes": len(graph), "trace": t_trace, "print": t_print, "parse": t_parse}


def main():
    sizes = [1000, 10000, 50000]
    rows = [measure(n) for n in sizes]
    print("IR scaling (seconds); growth = (time ratio) / (node ratio), linear means ~1, target <= 1.5")
    print(f"{'ops':>8}{'nodes':>8}{'trace':>10}{'print':>10}{'parse':>10}{'trace growth':>14}{'print growth':>14}"
          f"{'parse growth':>14}")
    for i, (n, r) in enumerate(zip(sizes, rows)):
        growth = ["", "", ""]
        if i:
            prev = rows[i - 1]
            node_ratio = r["nodes"] / prev["nodes"]
            growth = [f"{(r[k] / prev[k]) / node_ratio:.2f}" for k in ("trace", "print", "parse")]
        print(f"{n:>8}{r['nodes']:>8}{r['trace']:>10.3f}{r['print']:>10.3f}{r['parse']:>10.3f}"
              f"{growth[0]:>14}{growth[1]:>14}{growth[2]:>14}")


if __name__ == "__main__":
    main()
