"""F.pad in segment programs (runtime/lowerings/pads.py, native/pad.py) against the reference
interpreter: every mode, the last one or two dims, both float dtypes, any batch size."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
import scriptc.nn.functional as F
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


class _Padded(torch.nn.Module):
    def __init__(self, pad, mode, value):
        super().__init__()
        self.pad, self.mode, self.value = pad, mode, value

    def forward(self, x):
        if self.mode == "constant":
            return F.pad(torch.relu(x), self.pad, value=self.value) * 2
        return F.pad(torch.relu(x), self.pad, mode=self.mode) * 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, pad, mode, value", [
    ((2, 3, 5, 7), (1, 1, 1, 1), "reflect", None),
    ((2, 3, 5, 7), (3, 2, 4, 1), "reflect", None),
    ((2, 3, 5, 7), (2, 0, 0, 3), "replicate", None),
    ((2, 3, 5, 7), (5, 7, 3, 5), "circular", None),
    ((2, 3, 5, 7), (1, 2, 3, 0), "constant", 0.0),
    ((2, 3, 5, 7), (4, 4, 2, 2), "constant", -1.5),
    ((2, 4, 9), (3, 1), "reflect", None),
    ((2, 4, 9), (2, 2), "constant", 0.25),
    ((2, 1, 1), (0, 3), "replicate", None),
])
def test_a_pad_in_a_program_equals_the_interpreter(shape, pad, mode, value, dtype):
    model = _Padded(pad, mode, value)
    example = torch.from_numpy(np.ones(shape, dtype=dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(0)
    for batch in (2, 1, 5, 33):
        x = rng.standard_normal((batch,) + shape[1:]).astype(dtype)
        (got,), (expected,) = executor([x]), reference.run([x])
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    segments = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segments and all(s.programs and all(s.programs.values()) for s in segments), \
        [s.reason for s in segments]
    assert sum(len(s._launches) for s in executor.group_steps) <= len(executor.group_steps)  # no call refused


def test_a_pad_of_another_image_size_runs_the_steps():
    model = _Padded((1, 1, 1, 1), "reflect", None)
    graph = torch.jit.optimize_for_inference(torch.jit.script(model), jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    rng = np.random.default_rng(1)
    for shape in ((2, 3, 5, 7), (2, 3, 6, 4), (1, 3, 5, 7)):  # (the program was made for 5 x 7 images)
        x = rng.standard_normal(shape).astype(np.float32)
        (got,), (expected,) = executor([x]), reference.run([x])
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        executor([np.zeros((1, 3, 1, 7), np.float32)])
