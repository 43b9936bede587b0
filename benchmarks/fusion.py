"""Fused kernels vs eager: the 8-op tanh-GELU chain on 4M float32, softmax and layer_norm over the last dim of
4096x1024, at 1 and 2 threads, beside this machine's copy bandwidth. `scriptc` is the traced function
through optimize_for_inference; `script` the same function under @jit.script with no example inputs
(a generic plan: its group compiles at the first call).

Targets (issue: LLVM codegen): (a) >= 8x numpy eager at 1 thread and 12x at 2, and >= 80% of the copy
bandwidth at the same thread count; (b) and (c) >= 4x numpy. (Issue #30: the @script GELU chain within
1.1x of the traced one and at least 8x numpy.)
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from common import optional, timeit_interleaved

import scriptc as torch
from scriptc.runtime.executor import Executor

real_torch = optional("torch")


def gelu_chain(T):
    def fn(x, w, b):
        y = x * w + b
        return 0.5 * y * (1 + T.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
    return fn


def softmax(T):
    return lambda x: T.softmax(x, -1)


def layer_norm(T):
    return lambda x: T.nn.functional.layer_norm(x, [x.shape[-1]])


def gelu_script(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))


def softmax_script(x):
    return torch.softmax(x, -1)


def layer_norm_script(x):
    return torch.nn.functional.layer_norm(x, [x.size(-1)])


def numpy_versions():
    def gelu_np(x, w, b):
        y = x * w + b
        return 0.5 * y * (1 + np.tanh(0.79788456 * (y + 0.044715 * y * y * y)))

    def softmax_np(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def layer_norm_np(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    return gelu_np, softmax_np, layer_norm_np


COPY_ELEMENTS = 16 << 20


def copier(threads: int):
    """np.copyto on 16M float32, split over `threads` threads; (callable, bytes it reads + writes)."""
    src = np.random.rand(COPY_ELEMENTS).astype(np.float32)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(p[0], p[-1] + 1) for p in parts]

    def run():
        workers = [threading.Thread(target=np.copyto, args=(dst[a:b], src[a:b])) for a, b in bounds[1:]]
        for w in workers:
            w.start()
        np.copyto(dst[bounds[0][0]:bounds[0][1]], src[bounds[0][0]:bounds[0][1]])
        for w in workers:
            w.join()
    return run, 2 * src.nbytes


def main():
    rng = np.random.default_rng(0)
    x4m = rng.standard_normal((4096, 1024)).astype(np.float32)
    w, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    cases = [("(a) GELU chain 4M float32", gelu_chain, gelu_script, (x4m, w, b)),
             ("(b) softmax 4096x1024", softmax, softmax_script, (x4m,)),
             ("(c) layer_norm 4096x1024", layer_norm, layer_norm_script, (x4m,))]
    np_fns = numpy_versions()
    print("Fusion benchmark (time per call; ratios are numpy time / time; GB/s counts bytes read+written once).")
    print("Each row times its columns and the copy in turns (median of 9 rounds), so that a noisy neighbour")
    print("slows them alike; 'copy' is that row's np.copyto bandwidth at the same thread count. At one thread the")
    print("times are the process's CPU seconds (a call's wait for a core on a shared machine left out).")
    for threads in (1, 2):
        copy, copied = copier(threads)
        print(f"\nthreads={threads}")
        print(f"{'case':<28}{'numpy':>10}{'torch':>10}{'torch.jit':>11}{'scriptc':>10}{'script':>10}{'x numpy':>9}"
              f"{'sc/tr':>7}{'GB/s':>8}{'copy':>7}{'% copy':>8}")
        if real_torch is not None:
            real_torch.set_num_threads(threads)
        for (name, make, script, args), np_fn in zip(cases, np_fns):
            fns = {"copy": copy, "numpy": lambda: np_fn(*args)}
            if real_torch is not None:
                targs = [real_torch.from_numpy(a) for a in args]
                eager = make(real_torch)
                fns["torch"] = lambda: eager(*targs)
                try:
                    scripted = real_torch.jit.trace(eager, tuple(targs))
                    fns["torch.jit"] = lambda: scripted(*targs)
                except Exception:
                    pass
            traced = torch.jit.trace(make(torch), tuple(torch.from_numpy(a) for a in args), check_trace=False)
            graph = torch.jit.optimize_for_inference(traced, jit=False).graph
            executor = Executor(graph, threads=threads)
            fns["scriptc"] = lambda: executor(list(args))
            generic = torch.jit.optimize_for_inference(torch.jit.script(script), threads=threads)._runner
            fns["script"] = lambda: generic.run(list(args))
            t = timeit_interleaved(fns, min_time=1.0, rounds=9, clock=time.process_time if threads == 1 else time.perf_counter)
            nan = float("nan")
            bw = copied / t["copy"] / 1e9
            gbs = 2 * x4m.nbytes / t["scriptc"] / 1e9
            print(f"{name:<28}{t['numpy'] * 1e3:>8.2f}ms{t.get('torch', nan) * 1e3:>8.2f}ms"
                  f"{t.get('torch.jit', nan) * 1e3:>9.2f}ms{t['scriptc'] * 1e3:>8.2f}ms{t['script'] * 1e3:>8.2f}ms"
                  f"{t['numpy'] / t['scriptc']:>8.1f}x{t['script'] / t['scriptc']:>6.2f}x{gbs:>8.1f}{bw:>7.1f}"
                  f"{100 * gbs / bw:>7.0f}%")


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    main()
