"""Planned cats A/B: SqueezeNet 1.1 at 2x3x64x64 with the segment's cat planning off (each Fire
module's cat copies both expand convolutions' outputs) and on (the convolutions write straight into
their channels of the cat's result: runtime/program_memory.plan_concatenations), beside onnxruntime,
timed in interleaved turns in one process at one thread (median CPU time per call).

    python benchmarks/concat.py [--rounds 15]

Issue #30's target: SqueezeNet at most 1.1x onnxruntime's time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402  (after the thread counts, which the libraries read when loaded)

from common import fmt_time, timeit_interleaved  # noqa: E402
from models import _ort_session  # noqa: E402
from zoo import MODELS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    import onnxruntime as ort
    import torch

    import scriptc
    from scriptc.runtime import program_builder, program_memory

    spec = next(m for m in MODELS if m.name.startswith("SqueezeNet"))
    torch.manual_seed(0)
    theirs = spec.make(torch).eval()
    ours = spec.make(scriptc).eval()
    ours.load_state_dict({k: scriptc.from_numpy(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    xs = spec.inputs(np.random.default_rng(0))
    notes: list[str] = []
    session = _ort_session(torch, ort, theirs, [torch.from_numpy(x) for x in xs], 1, tempfile.mkdtemp(), notes,
                           spec.name)
    if session is None:
        raise SystemExit(f"no onnxruntime session: {notes}")
    feed = {f"input{i}": x for i, x in enumerate(xs)}
    fns = {"onnxruntime": lambda: session.run(None, feed)}
    with scriptc.no_grad():
        traced = scriptc.jit.trace(ours, tuple(scriptc.from_numpy(x) for x in xs))
        for name, plan in (("cats copied", lambda *a: ({}, {})), ("cats planned", program_memory.plan_concatenations)):
            program_builder.plan_concatenations = plan  # (read when a segment's program is built: the first calls)
            optimized = scriptc.jit.optimize_for_inference(traced, threads=1)
            for _ in range(3):
                optimized(*xs)
            np.testing.assert_allclose(np.asarray(optimized(*xs)), session.run(None, feed)[0], rtol=1e-4, atol=1e-5)
            fns[name] = lambda optimized=optimized: optimized(*xs)
        program_builder.plan_concatenations = program_memory.plan_concatenations
        cells = timeit_interleaved(fns, min_time=0.1, rounds=args.rounds, warm_s=0.15, clock=time.process_time)
    print(f"{spec.name}, 1 thread, median CPU time of {args.rounds} interleaved rounds")
    for name, seconds in cells.items():
        print(f"  {name:<14}{fmt_time(seconds):>12}{seconds / cells['onnxruntime']:>8.3f}x onnxruntime")
    print(f"  planned / copied: {cells['cats planned'] / cells['cats copied']:.3f}x")


if __name__ == "__main__":
    main()
