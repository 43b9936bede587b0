"""Scratch memory of segment programs (runtime/program_memory.py): buffers whose values are dead share
memory, sized at run time by the largest of them - against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import program as native
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


def _chain(widths: list[int]) -> torch.nn.Module:
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers).eval()


def _run(widths: list[int], batches: list[int]):
    torch.manual_seed(1)
    model = _chain(widths)
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(3, widths[0])), jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    (segment,) = [s for s in executor.steps if isinstance(s, SegmentStep)]
    rng = np.random.default_rng(2)
    for batch in batches:
        x = rng.standard_normal((batch, widths[0])).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-6)
    (program,) = segment.programs.values()
    return program


def test_a_deep_chain_keeps_three_layers_of_scratch_not_two_per_layer():
    program = _run([16] * 13, [64, 1, 5, 64])
    need = program._local.state.frame[native.NEED[native.SCRATCH]]
    layer = 64 * 16 * 4
    # Each layer a product and the activation of it (24 buffers): the product's, then the outputs of
    # two layers at a time.
    assert 0 < need <= 3 * (layer + native.ALIGNMENT)


@pytest.mark.parametrize("widths", [[16, 64, 8, 32, 8, 48, 3], [5, 300, 2, 300, 2]])
def test_buffers_of_other_sizes_share_the_largest_range(widths):
    _run(widths, [64, 1, 7, 129])
