"""pixel_shuffle (runtime/lowerings/shuffles.py, native/shuffle.py) and a conv2d whose kernel covers its
whole input (lowerings/kernels.py's product) in segment programs, against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


def _one_program(model, example: np.ndarray, batches, dtype, tolerance: float):
    """The model traced and optimized is one program that equals the interpreter at every batch size."""
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), torch.from_numpy(example)), jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(1)
    for batch in batches:
        x = rng.standard_normal((batch,) + example.shape[1:]).astype(dtype)
        got, want = executor([x])[0], reference.run([x])[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason
    return executor, reference


class _Upscale(torch.nn.Module):
    """super_resolution's last layer: a convolution, then pixel_shuffle, then something reading it."""

    def __init__(self, factor: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(6, 2 * factor * factor, 3, padding=1)
        self.shuffle = torch.nn.PixelShuffle(factor)

    def forward(self, x):
        return torch.sigmoid(self.shuffle(self.conv(x))) * 2.0


@pytest.mark.parametrize("factor", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pixel_shuffle_equals_the_interpreter_at_every_batch_size(factor, dtype):
    torch.manual_seed(factor)
    model = _Upscale(factor)
    if dtype == np.float64:
        model = model.double()
    example = np.random.default_rng(0).standard_normal((2, 6, 5, 7)).astype(dtype)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    _one_program(model, example, (2, 1, 3), dtype, tolerance)


def test_pixel_shuffle_of_channels_it_cannot_split_raises_torchs_error():
    shuffle = torch.nn.PixelShuffle(2)
    graph = torch.jit.optimize_for_inference(torch.jit.trace(shuffle, torch.randn(1, 8, 3, 3)), jit=False).graph
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        Executor(graph)([np.zeros((1, 6, 3, 3), np.float32)])


class _Critic(torch.nn.Module):
    """DCGAN discriminator's end: a strided conv, then a conv whose kernel covers all it is given."""

    def __init__(self, bias: bool, stride: int):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 8, 4, 2, 1, bias=False)
        self.last = torch.nn.Conv2d(8, 2, 4, stride, 0, bias=bias)

    def forward(self, x):
        return torch.sigmoid(self.last(torch.nn.functional.leaky_relu(self.down(x), 0.2))).view(-1, 2)


@pytest.mark.parametrize("bias, stride", [(False, 1), (False, 3), (True, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_convolution_covering_its_whole_input_equals_the_interpreter(bias, stride, dtype):
    torch.manual_seed(2)
    model = _Critic(bias, stride)
    if dtype == np.float64:
        model = model.double()
    example = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(dtype)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    executor, _ = _one_program(model, example, (2, 1, 9, 17), dtype, tolerance)
    x = np.random.default_rng(4).standard_normal((5, 3, 8, 8)).astype(dtype)
    with torch.no_grad():
        np.testing.assert_allclose(executor([x])[0], model(torch.from_numpy(x)).numpy(), rtol=tolerance,
                                   atol=tolerance)
