"""Pass pipeline scaling on straight-line traced graphs of 1k, 10k and 50k nodes.

Target (issue: passes): linear growth, and 10,000 nodes through the whole pipeline in under 5 s.
"""

from __future__ import annotations

import sys
import time

import scriptc as torch
from scriptc.passes import optimize

sys.setrecursionlimit(10000)


def chain(n_ops: int):
    def fn(x, w):
        y = x
        for i in range(n_ops):
            if i % 4 == 0:
                y = torch.tanh(y * w + 0.5)
            elif i % 4 == 1:
                y = y.sum(dim=-1, keepdim=True) + y
            elif i % 4 == 2:
                y = torch.relu(y - 0.25)
            else:
                y = y * 1.0001
        return y
    return fn


def main():
    print("pass pipeline (level 2) on traced straight-line graphs; growth = time ratio / node ratio (~1 = linear)")
    print(f"{'nodes':>8}{'seconds':>10}{'growth':>10}{'slowest pass':>28}")
    previous = None
    for target in (1000, 10000, 50000):
        traced = torch.jit.trace(chain(target // 2), (torch.ones(2, 4), torch.ones(4)), check_trace=False)
        graph = traced.graph
        records = []
        start = time.perf_counter()
        optimize(graph, 2, records=records)
        seconds = time.perf_counter() - start
        n = len(graph)
        slowest = max(records, key=lambda r: r.seconds)
        growth = "" if previous is None else f"{(seconds / previous[1]) / (n / previous[0]):.2f}"
        print(f"{n:>8}{seconds:>10.3f}{growth:>10}{slowest.name + f' {slowest.seconds:.3f}s':>28}")
        previous = (n, seconds)


if __name__ == "__main__":
    main()
