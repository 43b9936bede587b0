"""The compiled GEMM loops against torch's matmul (oneDNN/MKL) on the products the benchmark models run.

Each row is one product as the segment program calls it, at one thread: a convolution's tap products
(native/gemm.py's row-table loop, its table and kept lanes from the lowering's own tap_plan and
kept_columns), a grouped product of several images' columns (the plain loop), or a layer's product by
its packed frozen weights (native/linear.py). torch multiplies the same (M, K) by (K, N) matrices,
dense: a yardstick for the loop, not for the layer (torch's convolution is not this product).

    python benchmarks/gemm.py [--only NAME,...]

Timings are medians of interleaved rounds of CPU time (common.timeit_interleaved): on a shared
machine read the ratio column (> 1: scriptc faster).
"""

from __future__ import annotations

import argparse
import ctypes
import time

import numpy as np

from common import optional, table, timeit_interleaved

from scriptc.codegen.llvm.driver import KERNEL_TYPE
from scriptc.native import gemm, linear
from scriptc.native.geometry import conv_geometry
from scriptc.native.heads import gemm_runs
from scriptc.native.loops import loop_function
from scriptc.runtime.tap_products import kept_columns, tap_plan

real_torch = optional("torch")

# name: ("taps", (C, H, W), (O, KH, KW), stride, padding) - one image's convolution as tap products;
#       ("plain", M, K, N) - weights (M, K) by N columns (c3 x2: two images' columns side by side);
#       ("linear", M, K, N) - rows by packed weights.
PRODUCTS = {
    "DCGAN D c1 taps": ("taps", (3, 64, 64), (64, 4, 4), 2, 1),
    "DCGAN D c2 taps": ("taps", (64, 32, 32), (128, 4, 4), 2, 1),
    "DCGAN D c3 x2": ("plain", 256, 2048, 128),
    "DCGAN D c4 x4": ("plain", 512, 4096, 64),
    "super-res c1 taps": ("taps", (1, 64, 64), (64, 5, 5), 1, 2),
    "super-res c2 taps": ("taps", (64, 64, 64), (64, 3, 3), 1, 1),
    "super-res c3 taps": ("taps", (64, 64, 64), (32, 3, 3), 1, 1),
    "super-res c4 taps": ("taps", (32, 64, 64), (9, 3, 3), 1, 1),
    "small CNN c1 taps": ("taps", (3, 64, 64), (32, 3, 3), 1, 1),
    "small CNN c2 taps": ("taps", (32, 64, 64), (64, 3, 3), 2, 1),
    "mnist c2 taps": ("taps", (32, 26, 26), (64, 3, 3), 1, 0),
    "product": ("plain", 2048, 256, 128),
    "MLP b64 fc1": ("linear", 64, 784, 512),
    "MLP b64 fc2": ("linear", 64, 512, 512),
    "mnist fc1": ("linear", 16, 9216, 128),
    "word-LM input": ("linear", 700, 200, 800),
    "word-LM step": ("linear", 20, 200, 800),
    "word-LM decoder": ("linear", 700, 200, 1000),
}


def aligned(values: np.ndarray) -> np.ndarray:
    """A copy of float32 `values` starting on a 64-byte boundary (as the programs' arenas are)."""
    raw = np.empty(values.size + 16, np.float32)
    first = (-raw.ctypes.data % 64) // 4
    copy = raw[first:first + values.size].reshape(values.shape)
    copy[...] = values
    return copy


def kernel_call(function: int, total: int, arrays: list, meta: list):
    """A function that runs the loop at `function` over its whole range, holding what it reads."""
    pointers = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    words = (ctypes.c_int64 * len(meta))(*meta)
    run = KERNEL_TYPE(function)

    def call():
        run(0, total, pointers, words)
    call.keep = (arrays, pointers, words)
    return call


def product(spec, rng):
    """(scriptc's call, a, b, out) of one product: torch multiplies a by b; out is scriptc's result."""
    kind = spec[0]
    lanes = gemm.vector_columns("float32")
    zero = np.zeros(1, np.float32)
    if kind == "taps":
        (c, h, w), (o, kh, kw), stride, padding = spec[1:]
        geometry = conv_geometry((1, c, h, w), (o, c, kh, kw), [stride] * 2, [padding] * 2, [1, 1], 1)
        oh, ow = geometry[6], geometry[7]
        hq, wq, offsets = tap_plan((c, h, w), (o, c, kh, kw), geometry)
        depth, wide = c * kh * kw, oh * wq
        phases = aligned(rng.standard_normal(c * stride * stride * hq * wq + kw).astype(np.float32))
        kept_lanes, kept_at = kept_columns(wide, wq, ow, lanes)
        a = rng.standard_normal((o, depth)).astype(np.float32)
        out = aligned(np.zeros((o, oh * ow), np.float32))
        call = kernel_call(gemm.rows_function("float32"), -(-wide // lanes),
                           [a, phases, out, np.zeros(o, np.float32), zero, offsets, kept_lanes, kept_at],
                           [o, depth, wide, 0, 1, hq * wq, oh * ow, 0])
        b = np.stack([phases[k:k + wide] for k in offsets]).reshape(depth, oh, wq)[:, :, :ow].reshape(depth, -1)
        return call, a, b, out
    rows, depth, width = spec[1:]
    a = aligned(rng.standard_normal((rows, depth)).astype(np.float32))
    b = aligned(rng.standard_normal((depth, width)).astype(np.float32))
    out = aligned(np.zeros((rows, width), np.float32))
    if kind == "plain":
        call = kernel_call(loop_function("gemm", "float32"), -(-width // lanes), [a, b, out, zero, zero],
                           [rows, depth, width, 0, 0, width, width])
    else:
        packed = aligned(linear.pack(b))
        bias = linear.pack_bias(None, width, np.float32)
        call = kernel_call(loop_function("linear", "float32"), linear.panels(width, np.float32),
                           [a, packed, out, bias, zero], [rows, depth, width, 0])
    return call, a, b, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated parts of product names")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if not gemm_runs():
        raise SystemExit("the compiled GEMM needs 512-bit vectors (AVX-512); this CPU has none")
    if real_torch is not None:
        real_torch.set_num_threads(1)
    wanted = [part for part in args.only.split(",") if part]
    rng = np.random.default_rng(0)
    rows = []
    for name, spec in PRODUCTS.items():
        if wanted and not any(part in name for part in wanted):
            continue
        call, a, b, out = product(spec, rng)
        call()
        np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-2)
        fns = {"scriptc": call}
        if real_torch is not None:
            ta, tb = real_torch.from_numpy(a), real_torch.from_numpy(np.ascontiguousarray(b))
            result = real_torch.empty(a.shape[0], b.shape[1])
            fns["torch"] = lambda ta=ta, tb=tb, result=result: real_torch.matmul(ta, tb, out=result)
        timings = timeit_interleaved(fns, min_time=0.3, rounds=args.rounds, clock=time.process_time)
        label = f"{name} {a.shape[0]}x{a.shape[1]}x{b.shape[1]}"
        rows.append((label, timings))
        print(f"{label}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in timings.items()), flush=True)
    print()
    print(table("GEMM products at one thread (ratio: torch's time over scriptc's)", rows, baseline="torch"))


if __name__ == "__main__":
    main()
