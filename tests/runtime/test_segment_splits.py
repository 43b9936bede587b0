"""A segment whose lowering fails at one node splits there (runtime/segments.py): the nodes before it
and after it stay native programs, the node runs as a step between them, for every batch size."""

from __future__ import annotations

import numpy as np

import scriptc as torch
from scriptc.codegen.llvm.driver import STATS
from scriptc.runtime.segments import SegmentStep

F = torch.nn.functional


class _PoolInTheMiddle(torch.nn.Module):
    """A convolution, then an adaptive pool to sizes that do not divide the image (no lowering: a
    program refuses it), then two Linear layers."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.hidden = torch.nn.Linear(72, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = F.adaptive_avg_pool2d(torch.relu(self.conv(x)), 3)
        return self.out(torch.relu(self.hidden(h.flatten(1))))


def test_a_node_with_no_lowering_splits_its_segment_into_two_programs():
    torch.manual_seed(0)
    model = _PoolInTheMiddle().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, (torch.randn(2, 3, 5, 5),)), threads=1)
    [segment] = [s for s in fast._runner.steps if isinstance(s, SegmentStep)]
    rng = np.random.default_rng(0)
    compiles = None
    with torch.no_grad():
        for call, batch in enumerate((2, 2, 1, 7, 33, 2)):
            if call == 2:
                compiles = STATS.compiles
            x = torch.from_numpy(rng.standard_normal((batch, 3, 5, 5)).astype(np.float32))
            np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert STATS.compiles == compiles  # new batch sizes compile nothing
    assert "adaptive pool" in segment.reason
    [parts] = segment.splits.values()
    programs = [p for p in parts if isinstance(p, SegmentStep)]
    assert len(parts) == 3 and len(programs) == 2  # program, the pool's step, program
    for part in programs:
        assert len(part.programs) == 1 and all(part.programs.values()), part.reason

        def refused(frame, part=part):
            raise AssertionError(f"a program refused a call: {part.reason}")
        part.run_steps = refused
    x = torch.from_numpy(rng.standard_normal((5, 3, 5, 5)).astype(np.float32))
    with torch.no_grad():  # (a size never seen, with both programs' steps off)
        np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
